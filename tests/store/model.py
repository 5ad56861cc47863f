"""A pure in-memory model of DESIGN.md's rules: the oracle the stateful tests compare with.

It is written from the documents, not from the store: its transition table is DESIGN.md's rule 4
read with API.md's event table (one row per source state), and its digests are its own RFC 8785
canonical JSON for the values the tests make (objects, strings, integers, booleans, null) hashed
with SHA-256. It imports only the store's vocabulary (names of states, events, errors), so a wrong
transition, a wrong fingerprint or a wrong race digest in the store shows as a disagreement.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from harness.domain import (
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    EventType,
    HarnessError,
    IdempotencyKeyReused,
    Intent,
    InvalidTransition,
    JobCompleted,
    JobStatus,
    NotFound,
)

_S, _E = AttemptState, EventType
# (state, event) -> next state. DESIGN.md rule 4: starting → running → succeeded | failed |
# unknown; unknown → succeeded | failed | cancelled; starting | running → cancelled. API.md's
# table also lets a starting attempt time out, fail or succeed. Any pair not listed is refused
# (409 invalid_transition), from a terminal state above all.
MODEL_TRANSITIONS: dict[tuple[AttemptState, EventType], AttemptState] = {
    (_S.STARTING, _E.DISPATCHED): _S.RUNNING,
    (_S.STARTING, _E.TIMED_OUT): _S.UNKNOWN,
    (_S.STARTING, _E.FAILED): _S.FAILED,
    (_S.STARTING, _E.SUCCEEDED): _S.SUCCEEDED,
    (_S.STARTING, _E.CANCELLED): _S.CANCELLED,
    (_S.RUNNING, _E.TIMED_OUT): _S.UNKNOWN,  # rule 6: a timeout is unknown, never failed
    (_S.RUNNING, _E.FAILED): _S.FAILED,
    (_S.RUNNING, _E.SUCCEEDED): _S.SUCCEEDED,
    (_S.RUNNING, _E.CANCELLED): _S.CANCELLED,
    (_S.UNKNOWN, _E.FAILED): _S.FAILED,
    (_S.UNKNOWN, _E.SUCCEEDED): _S.SUCCEEDED,
    (_S.UNKNOWN, _E.CANCELLED): _S.CANCELLED,
}
MODEL_OPEN = {_S.STARTING, _S.RUNNING, _S.UNKNOWN}  # rule 4: open = starting, running, unknown


def model_next(state: AttemptState, event: EventType) -> AttemptState:
    """The model's transition, or the error the store must raise for it."""
    target = MODEL_TRANSITIONS.get((state, event))
    if target is None:
        raise InvalidTransition(from_state=state.value, to_state=event.value, event=event.value)
    return target


def canonical(value: Any) -> str:
    """RFC 8785 canonical JSON of the values the tests make: keys sorted by UTF-16 code units,
    no whitespace, strings escaped as ECMAScript does, integers as written."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(f"{canonical(k)}:{canonical(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if value is None or isinstance(value, bool | str) or (
            isinstance(value, int) and abs(value) < 2**53):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"the model's canonical JSON does not cover {value!r}")


def digest(value: Any) -> str:
    """SHA-256 hex of the canonical JSON: a result's payload_sha256, an intent's fingerprint."""
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def intent_fingerprint(intent: Intent) -> str:
    """API.md: the digest of {contract, input, params, policy} with defaults filled in."""
    return digest({"contract": intent.contract, "input": intent.input,
                   "params": intent.params or {},
                   "policy": {"max_open_attempts": intent.policy.max_open_attempts}})


@dataclass
class MJob:
    owner: str
    fingerprint: str
    max_open: int
    status: JobStatus = JobStatus.PENDING
    version: int = 1
    completed_by: str | None = None
    result: Any = None


@dataclass
class MAttempt:
    job_id: str
    owner: str
    state: AttemptState
    read_version: int
    outcome: ClaimOutcome | None = None
    digest: str | None = None


@dataclass
class Model:
    jobs: dict[str, MJob] = field(default_factory=dict)
    by_key: dict[tuple[str, str], str] = field(default_factory=dict)
    attempts: dict[str, MAttempt] = field(default_factory=dict)
    # per job, its lost claims: (attempt, winner, reason, payload digest)
    races: dict[str, list[tuple[str, str | None, str, str]]] = field(default_factory=dict)

    def create(self, owner: str, key: str, intent: Intent) -> tuple[bool, str | None]:
        """(created, job id) for a new job; (False, id) for a replay. The id of a new job is
        the store's, so the caller registers it with :meth:`register`."""
        existing = self.by_key.get((owner, key))
        if existing is None:
            return True, None
        if self.jobs[existing].fingerprint != intent_fingerprint(intent):
            raise IdempotencyKeyReused()
        return False, existing

    def register(self, owner: str, key: str, job_id: str, intent: Intent) -> None:
        self.by_key[(owner, key)] = job_id
        self.jobs[job_id] = MJob(owner, intent_fingerprint(intent), intent.policy.max_open_attempts)
        self.races[job_id] = []

    def job(self, owner: str, job_id: str) -> MJob:
        job = self.jobs.get(job_id)
        if job is None or job.owner != owner:
            raise NotFound()
        return job

    def attempt(self, owner: str, attempt_id: str) -> MAttempt:
        attempt = self.attempts.get(attempt_id)
        if attempt is None or attempt.owner != owner:
            raise NotFound()
        return attempt

    def open_attempts(self, job_id: str) -> list[str]:
        return [i for i, a in self.attempts.items() if a.job_id == job_id and a.state in MODEL_OPEN]

    def check_start(self, owner: str, job_id: str) -> None:
        """Raise what the store must raise for a start, if anything."""
        job = self.job(owner, job_id)
        if job.status in (JobStatus.SUCCEEDED, JobStatus.CANCELLED):
            raise JobCompleted()
        if len(self.open_attempts(job_id)) >= job.max_open:
            raise AttemptInFlight(blocking_attempt_id=self.open_attempts(job_id)[0])

    def register_attempt(self, owner: str, job_id: str, attempt_id: str) -> None:
        job = self.jobs[job_id]
        self.attempts[attempt_id] = MAttempt(job_id, owner, AttemptState.STARTING, job.version)
        if job.status is JobStatus.PENDING:
            job.status = JobStatus.RUNNING

    def move(self, owner: str, attempt_id: str, event: EventType) -> None:
        attempt = self.attempt(owner, attempt_id)
        attempt.state = model_next(attempt.state, event)

    def succeed(self, owner: str, attempt_id: str, result: Any) -> ClaimOutcome:
        attempt = self.attempt(owner, attempt_id)
        sha = digest(result)
        if attempt.state is AttemptState.SUCCEEDED or (
            attempt.state is AttemptState.CANCELLED and attempt.digest is not None
        ):
            if attempt.digest == sha:
                assert attempt.outcome is not None
                return attempt.outcome
            raise InvalidTransition(from_state=attempt.state, to_state="succeeded", event="x")
        job = self.jobs[attempt.job_id]
        if attempt.state is AttemptState.CANCELLED:
            self.races[attempt.job_id].append(
                (attempt_id, job.completed_by, "attempt_cancelled", sha))
            attempt.outcome, attempt.digest = ClaimOutcome.LOST, sha
            return ClaimOutcome.LOST
        attempt.state = model_next(attempt.state, EventType.SUCCEEDED)
        attempt.digest = sha
        if job.version == attempt.read_version and job.completed_by is None:
            job.version += 1
            job.completed_by, job.result, job.status = attempt_id, result, JobStatus.SUCCEEDED
            attempt.outcome = ClaimOutcome.WON
        else:
            self.races[attempt.job_id].append(
                (attempt_id, job.completed_by, "already_completed", sha))
            attempt.outcome = ClaimOutcome.LOST
        return attempt.outcome


def error_name(exc: BaseException | None) -> str | None:
    return type(exc).__name__ if isinstance(exc, HarnessError) else None
