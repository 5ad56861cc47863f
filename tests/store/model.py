"""A pure in-memory model of DESIGN.md's rules: the oracle the stateful tests compare with."""

from __future__ import annotations

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
    next_state,
    payload_digest,
)


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
    races: dict[str, list[tuple[str, str | None, str]]] = field(default_factory=dict)

    def create(self, owner: str, key: str, intent: Intent) -> tuple[bool, str | None]:
        """(created, job id) for a new job; (False, id) for a replay. The id of a new job is
        the store's, so the caller registers it with :meth:`register`."""
        existing = self.by_key.get((owner, key))
        if existing is None:
            return True, None
        if self.jobs[existing].fingerprint != intent.fingerprint:
            raise IdempotencyKeyReused()
        return False, existing

    def register(self, owner: str, key: str, job_id: str, intent: Intent) -> None:
        self.by_key[(owner, key)] = job_id
        self.jobs[job_id] = MJob(owner, intent.fingerprint, intent.policy.max_open_attempts)
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
        return [i for i, a in self.attempts.items() if a.job_id == job_id and a.state.is_open]

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
        attempt.state = next_state(attempt.state, event)

    def succeed(self, owner: str, attempt_id: str, result: Any) -> ClaimOutcome:
        attempt = self.attempt(owner, attempt_id)
        digest = payload_digest(result)
        if attempt.state is AttemptState.SUCCEEDED or (
            attempt.state is AttemptState.CANCELLED and attempt.digest is not None
        ):
            if attempt.digest == digest:
                assert attempt.outcome is not None
                return attempt.outcome
            raise InvalidTransition(from_state=attempt.state, to_state="succeeded", event="x")
        job = self.jobs[attempt.job_id]
        if attempt.state is AttemptState.CANCELLED:
            self.races[attempt.job_id].append((attempt_id, job.completed_by, "attempt_cancelled"))
            attempt.outcome, attempt.digest = ClaimOutcome.LOST, digest
            return ClaimOutcome.LOST
        attempt.state = next_state(attempt.state, EventType.SUCCEEDED)
        attempt.digest = digest
        if job.version == attempt.read_version and job.completed_by is None:
            job.version += 1
            job.completed_by, job.result, job.status = attempt_id, result, JobStatus.SUCCEEDED
            attempt.outcome = ClaimOutcome.WON
        else:
            self.races[attempt.job_id].append((attempt_id, job.completed_by, "already_completed"))
            attempt.outcome = ClaimOutcome.LOST
        return attempt.outcome


def error_name(exc: BaseException | None) -> str | None:
    return type(exc).__name__ if isinstance(exc, HarnessError) else None
