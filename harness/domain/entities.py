"""The entities: intent, policy, job, attempt, race, and what store operations return."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from harness.domain.clock import rfc3339
from harness.domain.errors import InvalidIntent
from harness.domain.fingerprint import canonical_json, check_json_value
from harness.domain.states import AttemptState, ClaimOutcome, JobStatus

MAX_OPEN_ATTEMPTS = (1, 2)


@dataclass(frozen=True, slots=True)
class Policy:
    """How many attempts a job may have open at once: 1, or 2 for an explicit hedge."""

    max_open_attempts: int = 1

    def __post_init__(self) -> None:
        if self.max_open_attempts not in MAX_OPEN_ATTEMPTS or isinstance(
            self.max_open_attempts, bool
        ):
            raise InvalidIntent(
                f"policy.max_open_attempts is {self.max_open_attempts!r}; it must be 1 or 2"
            )

    def to_json(self) -> dict[str, Any]:
        return {"max_open_attempts": self.max_open_attempts}

    @classmethod
    def from_json(cls, value: Any) -> Policy:
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise InvalidIntent("policy must be an object like {\"max_open_attempts\": 1}")
        unknown = set(value) - {"max_open_attempts"}
        if unknown:
            raise InvalidIntent(f"policy has unknown field(s) {sorted(unknown)}")
        return cls(max_open_attempts=value.get("max_open_attempts", 1))


@dataclass(frozen=True, slots=True)
class Intent:
    """What one user asked for: the contract, its input, params and policy (defaults filled)."""

    contract: str
    input: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    policy: Policy = field(default_factory=Policy)
    #: SHA-256 of the RFC 8785 canonical JSON of the intent; computed once, when it is built.
    fingerprint: str = field(default="", compare=False)
    #: Canonical JSON text of input, params and policy (what a TEXT column stores).
    canonical_parts: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.contract, str) or not self.contract:
            raise InvalidIntent("contract must be a non-empty string")
        if not isinstance(self.input, dict):
            raise InvalidIntent("input must be a JSON object")
        if not isinstance(self.params, dict):
            raise InvalidIntent("params must be a JSON object")
        check_json_value(self.input, "input")
        check_json_value(self.params, "params")
        parts = tuple(
            canonical_json(v).decode("utf-8")
            for v in (self.contract, self.input, self.params, self.policy.to_json())
        )
        # The members' names sort as contract < input < params < policy, so the canonical JSON
        # of the whole intent is its canonical members joined in this order (RFC 8785 §3.2.3).
        whole = '{{"contract":{},"input":{},"params":{},"policy":{}}}'.format(*parts)
        object.__setattr__(self, "canonical_parts", parts[1:])
        object.__setattr__(self, "fingerprint", hashlib.sha256(whole.encode()).hexdigest())

    @classmethod
    def trusted(
        cls, contract: str, input: dict[str, Any], params: dict[str, Any], policy: Policy,
        fingerprint: str,
    ) -> Intent:
        """An intent read back from a store: validated and fingerprinted when it was written."""
        intent = object.__new__(cls)
        for name, value in (
            ("contract", contract), ("input", input), ("params", params), ("policy", policy),
            ("fingerprint", fingerprint), ("canonical_parts", ()),
        ):
            object.__setattr__(intent, name, value)
        return intent

    def to_json(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "input": self.input,
            "params": self.params,
            "policy": self.policy.to_json(),
        }

    @classmethod
    def from_json(cls, body: Any) -> Intent:
        """Build an intent from a request body, naming the field that is wrong."""
        if not isinstance(body, dict):
            raise InvalidIntent("the request body must be a JSON object")
        unknown = set(body) - {"contract", "input", "params", "policy"}
        if unknown:
            raise InvalidIntent(f"unknown field(s) {sorted(unknown)} in the request body")
        if "contract" not in body:
            raise InvalidIntent("field 'contract' is required")
        if "input" not in body:
            raise InvalidIntent("field 'input' is required")
        params = body.get("params")
        return cls(
            contract=body["contract"],
            input=body["input"],
            params={} if params is None else params,
            policy=Policy.from_json(body.get("policy")),
        )


@lru_cache(maxsize=256)
def intent_of(text: str) -> Intent:
    """The intent a JSON text asks for, parsed, checked and fingerprinted once per text: runs
    send a few bodies thousands of times. Shared, so never changed by its users; a bad text
    raises every time (it is not remembered)."""
    return Intent.from_json(json.loads(text))


@dataclass(frozen=True, slots=True)
class Job:
    """The durable record of one intent."""

    id: str
    owner_id: str
    idempotency_key: str
    fingerprint: str
    intent: Intent
    status: JobStatus
    version: int
    completed_by: str | None
    result: Any
    created_at: datetime
    updated_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The API representation (owner omitted: it is the caller)."""
        return {
            "id": self.id,
            "idempotency_key": self.idempotency_key,
            "fingerprint": self.fingerprint,
            "contract": self.intent.contract,
            "input": self.intent.input,
            "params": self.intent.params,
            "policy": self.intent.policy.to_json(),
            "status": self.status.value,
            "version": self.version,
            "completed_by": self.completed_by,
            "result": self.result,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at a job against one provider."""

    id: str
    job_id: str
    provider: str
    state: AttemptState
    read_version: int
    outcome: ClaimOutcome | None
    error: dict[str, Any] | None
    result_sha256: str | None
    cancel_reason: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def is_open(self) -> bool:
        return self.state.is_open

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job_id": self.job_id,
            "provider": self.provider,
            "state": self.state.value,
            "read_version": self.read_version,
            "outcome": self.outcome.value if self.outcome else None,
            "error": self.error,
            "result_sha256": self.result_sha256,
            "cancel_reason": self.cancel_reason,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class Race:
    """A claim that lost: the payload was discarded, only its digest is kept."""

    attempt_id: str
    job_id: str
    at: datetime
    payload_sha256: str
    winner_attempt_id: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt_id": self.attempt_id,
            "at": rfc3339(self.at),
            "payload_sha256": self.payload_sha256,
            "winner_attempt_id": self.winner_attempt_id,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class CreateResult:
    """A job and whether this call created it (False: an idempotent replay)."""

    job: Job
    created: bool


@dataclass(frozen=True, slots=True)
class EventResult:
    """The attempt after an event, and the claim's outcome for a ``succeeded`` event."""

    attempt: Attempt
    outcome: ClaimOutcome | None = None
