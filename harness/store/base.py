"""The Store protocol: what every job/attempt store offers (reference, mutants, adapters)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from harness.domain import (
    Attempt,
    CreateResult,
    EventResult,
    EventType,
    Intent,
    InvalidIntent,
    Job,
    Race,
)
from harness.domain.fingerprint import check_json_value


@runtime_checkable
class Store(Protocol):
    """A job/attempt store. Every method is one transaction; owners are isolated (404, never 403).

    Errors are from :mod:`harness.domain.errors`: ``NotFound``, ``IdempotencyKeyReused``,
    ``AttemptInFlight``, ``JobCompleted``, ``InvalidTransition``, ``StoreError``.
    """

    backend: str

    def create_job(self, owner_id: str, idempotency_key: str, intent: Intent) -> CreateResult:
        """Insert-or-conflict: a new job (created=True) or the existing one for the same intent."""
        ...

    def get_job(self, owner_id: str, job_id: str) -> Job: ...

    def start_attempt(self, owner_id: str, job_id: str, provider: str) -> Attempt:
        """A new ``starting`` attempt holding an open slot, with ``read_version`` = job version."""
        ...

    def get_attempt(self, owner_id: str, attempt_id: str) -> Attempt: ...

    def list_attempts(self, owner_id: str, job_id: str) -> list[Attempt]:
        """The job's attempts, oldest first."""
        ...

    def dispatch(self, owner_id: str, attempt_id: str) -> Attempt:
        """starting → running: the provider request left."""
        ...

    def time_out(self, owner_id: str, attempt_id: str) -> Attempt:
        """starting | running → unknown: the outcome is not known; the slot stays held."""
        ...

    def fail(self, owner_id: str, attempt_id: str, error: dict[str, Any]) -> Attempt:
        """starting | running | unknown → failed: the slot is freed."""
        ...

    def succeed(self, owner_id: str, attempt_id: str, result: Any) -> EventResult:
        """→ succeeded, then the claim (DESIGN.md rule 7): outcome ``won`` or ``lost``."""
        ...

    def cancel(self, owner_id: str, attempt_id: str, reason: str) -> Attempt:
        """starting | running | unknown → cancelled (out-of-band): the slot is freed."""
        ...

    def list_races(self, owner_id: str, job_id: str) -> list[Race]:
        """The job's lost claims, oldest first."""
        ...

    def close(self) -> None: ...


def apply_event(
    store: Store, owner_id: str, attempt_id: str, event: EventType, body: dict[str, Any]
) -> EventResult:
    """Route an API event (``{"type": …}`` plus its fields) to the store method for it."""
    if event is EventType.DISPATCHED:
        return EventResult(store.dispatch(owner_id, attempt_id))
    if event is EventType.TIMED_OUT:
        return EventResult(store.time_out(owner_id, attempt_id))
    if event is EventType.FAILED:
        error = body.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("code"), str):
            raise InvalidIntent("a 'failed' event needs error: {\"code\": str, \"message\": str}")
        return EventResult(store.fail(owner_id, attempt_id, error))
    if event is EventType.SUCCEEDED:
        if "result" not in body or not isinstance(body["result"], dict):
            raise InvalidIntent("a 'succeeded' event needs result: an object")
        check_json_value(body["result"], "result")
        return store.succeed(owner_id, attempt_id, body["result"])
    reason = body.get("reason", "")
    if not isinstance(reason, str):
        raise InvalidIntent("reason must be a string")
    return EventResult(store.cancel(owner_id, attempt_id, reason))
