"""The reference job/attempt store, written once over any SQL dialect (SQLite, PostgreSQL).

The rules of DESIGN.md are held by the database: the UNIQUE (owner_id, idempotency_key)
constraint, the partial unique index on open attempt slots, and the conditional UPDATE of the
claim. This module only sequences statements inside one transaction per operation; subclasses
supply connections, parameter style and value conversion. Mutants subclass it and break one rule.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from harness.domain import (
    Attempt,
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    Clock,
    CreateResult,
    EventResult,
    EventType,
    IdempotencyKeyReused,
    Intent,
    InvalidTransition,
    Job,
    JobCompleted,
    JobStatus,
    NotFound,
    Policy,
    Race,
    SystemClock,
    next_state,
    payload_digest,
    validate_idempotency_key,
)
from harness.domain.states import JOB_FINAL_STATUSES
from harness.store.queries import load_queries

Row = Mapping[str, Any]
IdFactory = Callable[[str], str]


def random_ids(prefix: str) -> str:
    """Opaque, unguessable ids: ``job_…``, ``att_…``, ``race_…`` (128 random bits in hex)."""
    return f"{prefix}_{os.urandom(16).hex()}"


class Tx(ABC):
    """One open transaction: run named queries. The only place SQL reaches the driver."""

    @abstractmethod
    def execute(self, name: str, params: Mapping[str, Any]) -> tuple[list[Row], int]:
        """Run query ``name``; return its rows (if any) and the affected row count."""

    def one(self, name: str, **params: Any) -> Row | None:
        rows, _ = self.execute(name, params)
        return rows[0] if rows else None

    def all(self, name: str, **params: Any) -> list[Row]:
        return self.execute(name, params)[0]

    def run(self, name: str, **params: Any) -> int:
        return self.execute(name, params)[1]


class CursorTx(Tx):
    """A transaction on a DB-API connection whose execute() returns a cursor (sqlite3, psycopg)."""

    def __init__(self, conn: Any, queries: Mapping[str, str]) -> None:
        self.conn = conn
        self.queries = queries

    def execute(self, name: str, params: Mapping[str, Any]) -> tuple[list[Row], int]:
        cursor = self.conn.execute(self.queries[name], params)
        return self._rows(cursor), cursor.rowcount

    @staticmethod
    def _rows(cursor: Any) -> list[Row]:
        return cursor.fetchall() if cursor.description else []


class SqlStore(ABC):
    """The reference store. Every public method is one transaction."""

    backend: str = "sql"
    for_update: str = ""

    def __init__(self, *, clock: Clock | None = None, ids: IdFactory = random_ids) -> None:
        self.clock: Clock = clock or SystemClock()
        self.ids = ids
        self.queries = load_queries(self.for_update)

    # -- what a dialect supplies -------------------------------------------------------------
    @abstractmethod
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Tx]:
        """A transaction; commits on success, rolls back on error, wraps driver errors."""

    def statements(self) -> AbstractContextManager[Tx]:
        """Statements that need no transaction around them: each is atomic on its own, and
        they only read, or write once. PostgreSQL runs them in autocommit (one round trip
        each, instead of BEGIN … COMMIT); the default is a transaction."""
        return self.transaction()

    def reads(self) -> AbstractContextManager[Tx]:
        """Statements that only read. SQLite runs them in autocommit, under a shared lock only
        (a write transaction there takes the database's one write lock); the default is
        :meth:`statements`."""
        return self.statements()

    @abstractmethod
    def _json_in(self, value: Any) -> Any:
        """A JSON value as the driver wants it."""

    @abstractmethod
    def _json_out(self, value: Any) -> Any:
        """A JSON column as Python."""

    def _intent_in(self, intent: Intent) -> dict[str, Any]:
        """The intent's JSON columns as the driver wants them."""
        return {
            "input": self._json_in(intent.input),
            "params": self._json_in(intent.params),
            "policy": self._json_in(intent.policy.to_json()),
        }

    @abstractmethod
    def _time_in(self, value: datetime) -> Any: ...

    @abstractmethod
    def _time_out(self, value: Any) -> datetime: ...

    @abstractmethod
    def close(self) -> None:
        """Release connections."""

    # -- jobs -----------------------------------------------------------------------------------
    def create_job(self, owner_id: str, idempotency_key: str, intent: Intent) -> CreateResult:
        validate_idempotency_key(idempotency_key)
        fp = intent.fingerprint
        job_id, now = self.ids("job"), self.clock.now()
        with self.statements() as tx:
            row = tx.one(
                "insert_job",
                id=job_id,
                owner_id=owner_id,
                idempotency_key=idempotency_key,
                fingerprint=fp,
                contract=intent.contract,
                **self._intent_in(intent),
                max_open_attempts=intent.policy.max_open_attempts,
                now=self._time_in(now),
            )
            if row is not None:
                return CreateResult(self._new_job(owner_id, job_id, idempotency_key, intent, now),
                                    created=True)
            existing = tx.one("job_by_key", owner_id=owner_id, idempotency_key=idempotency_key)
        if existing is None:  # pragma: no cover - the conflicting row cannot vanish: no deletes
            raise NotFound("the conflicting job disappeared")
        return self._replay(owner_id, existing, fp)

    def _replay(self, owner_id: str, row: Row, fp: str) -> CreateResult:
        """The existing job for an idempotent retry, or the reuse error (rule 2)."""
        if row["fingerprint"] != fp:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used for a different request; "
                "send the original body, or use a new key for a new intent",
                job_id=row["id"],
            )
        return CreateResult(self._job(owner_id, row), created=False)

    def get_job(self, owner_id: str, job_id: str) -> Job:
        with self.reads() as tx:
            return self._job(owner_id, self._job_row(tx, owner_id, job_id))

    def _job_row(self, tx: Tx, owner_id: str, job_id: str) -> Row:
        row = tx.one("job_by_id", job_id=job_id, owner_id=owner_id)
        if row is None:
            raise NotFound(f"job {job_id} not found")
        return row

    # -- attempts ---------------------------------------------------------------------------
    def start_attempt(self, owner_id: str, job_id: str, provider: str) -> Attempt:
        with self.transaction() as tx:
            job = self._job_row(tx, owner_id, job_id)
            if JobStatus(job["status"]) in JOB_FINAL_STATUSES:
                raise JobCompleted(f"job {job_id} is {job['status']}; it takes no new attempts")
            limit = Policy.from_json(self._json_out(job["policy"])).max_open_attempts
            for slot in range(1, limit + 1):
                row = tx.one(
                    "insert_attempt",
                    id=self.ids("att"),
                    job_id=job_id,
                    owner_id=owner_id,
                    provider=provider,
                    slot=slot,
                    now=self._now(),
                )
                if row is not None:
                    tx.run("mark_job_running", job_id=job_id, now=self._now())
                    return self._attempt(row)
            # Every slot is held (or the job completed meanwhile): name the blocker.
            blockers = tx.all("open_attempts", job_id=job_id)
            job = self._job_row(tx, owner_id, job_id)
        if JobStatus(job["status"]) in JOB_FINAL_STATUSES:
            raise JobCompleted(f"job {job_id} is {job['status']}; it takes no new attempts")
        blocking = blockers[0]["id"] if blockers else "unknown"
        raise AttemptInFlight(blocking_attempt_id=blocking)

    def get_attempt(self, owner_id: str, attempt_id: str) -> Attempt:
        with self.reads() as tx:
            return self._attempt(self._attempt_row(tx, owner_id, attempt_id))

    def list_attempts(self, owner_id: str, job_id: str) -> list[Attempt]:
        with self.reads() as tx:
            self._job_row(tx, owner_id, job_id)
            return [self._attempt(r) for r in tx.all("attempts_of_job", job_id=job_id)]

    def _attempt_row(self, tx: Tx, owner_id: str, attempt_id: str) -> Row:
        row = tx.one("attempt_by_id", attempt_id=attempt_id, owner_id=owner_id)
        if row is None:
            raise NotFound(f"attempt {attempt_id} not found")
        return row

    def dispatch(self, owner_id: str, attempt_id: str) -> Attempt:
        return self._move(owner_id, attempt_id, EventType.DISPATCHED)

    def time_out(self, owner_id: str, attempt_id: str) -> Attempt:
        return self._move(owner_id, attempt_id, EventType.TIMED_OUT)

    def fail(self, owner_id: str, attempt_id: str, error: dict[str, Any]) -> Attempt:
        return self._move(owner_id, attempt_id, EventType.FAILED, error=error)

    def cancel(self, owner_id: str, attempt_id: str, reason: str) -> Attempt:
        return self._move(owner_id, attempt_id, EventType.CANCELLED, cancel_reason=reason)

    def _move(
        self,
        owner_id: str,
        attempt_id: str,
        event: EventType,
        *,
        error: dict[str, Any] | None = None,
        cancel_reason: str | None = None,
    ) -> Attempt:
        with self.transaction() as tx:
            row = self._attempt_row(tx, owner_id, attempt_id)
            current = AttemptState(row["state"])
            target = next_state(current, event)
            return self._attempt(self._write_state(
                tx, row, target, error=error, cancel_reason=cancel_reason,
                outcome=None, result_sha256=None,
            ))

    def _write_state(
        self,
        tx: Tx,
        row: Row,
        target: AttemptState,
        *,
        outcome: ClaimOutcome | None,
        result_sha256: str | None,
        error: dict[str, Any] | None = None,
        cancel_reason: str | None = None,
    ) -> Row:
        """Move the attempt from the state read in ``row`` to ``target`` (a compare-and-swap);
        the attempt's row as moved (``RETURNING``: no re-read)."""
        old_error = self._json_out(row["error"]) if row["error"] is not None else None
        new_error = error if error is not None else old_error
        slot = row["open_slot"] if target.is_open else None  # open → open keeps its slot
        moved = tx.all(
            "move_attempt",
            attempt_id=row["id"],
            from_state=row["state"],
            to_state=target.value,
            open_slot=slot,
            outcome=outcome.value if outcome else row["outcome"],
            error=self._json_in(new_error) if new_error is not None else None,
            result_sha256=result_sha256 or row["result_sha256"],
            cancel_reason=cancel_reason if cancel_reason is not None else row["cancel_reason"],
            now=self._now(),
        )
        if len(moved) != 1:
            # Another event moved the attempt first: report it as the transition it now is.
            raise InvalidTransition(
                from_state=row["state"], to_state=target.value, event="concurrent"
            )
        return moved[0]

    # -- the claim ------------------------------------------------------------------------------
    def succeed(self, owner_id: str, attempt_id: str, result: Any) -> EventResult:
        digest = payload_digest(result)
        with self.transaction() as tx:
            row = self._attempt_row(tx, owner_id, attempt_id)
            current = AttemptState(row["state"])
            if current is AttemptState.SUCCEEDED or (
                current is AttemptState.CANCELLED and row["result_sha256"] is not None
            ):
                if row["result_sha256"] == digest:  # a repeated event: same reply, no change
                    return EventResult(self._attempt(row), ClaimOutcome(row["outcome"]))
                raise InvalidTransition(
                    from_state=current.value, to_state="succeeded", event="succeeded"
                )
            if current is AttemptState.CANCELLED:
                # A cancelled attempt never wins: its late result is discarded and recorded.
                job = self._job_row(tx, owner_id, row["job_id"])
                self._record_race(tx, row, digest, job["completed_by"], "attempt_cancelled")
                moved = self._write_state(
                    tx, row, AttemptState.CANCELLED,
                    outcome=ClaimOutcome.LOST, result_sha256=digest,
                )
                outcome = ClaimOutcome.LOST
            else:
                next_state(current, EventType.SUCCEEDED)
                outcome = self._claim(tx, owner_id, row, result, digest)
                moved = self._write_state(
                    tx, row, AttemptState.SUCCEEDED, outcome=outcome, result_sha256=digest
                )
            return EventResult(self._attempt(moved), outcome)

    def _claim(self, tx: Tx, owner_id: str, row: Row, result: Any, digest: str) -> ClaimOutcome:
        """Rule 7: one conditional UPDATE; zero rows means the attempt lost."""
        won = tx.run(
            "claim_result",
            job_id=row["job_id"],
            attempt_id=row["id"],
            read_version=row["read_version"],
            result=self._json_in(result),
            now=self._now(),
        )
        if won == 1:
            return ClaimOutcome.WON
        job = self._job_row(tx, owner_id, row["job_id"])
        reason = "already_completed" if job["completed_by"] else "version_changed"
        self._record_race(tx, row, digest, job["completed_by"], reason)
        return ClaimOutcome.LOST

    def _record_race(
        self, tx: Tx, row: Row, digest: str, winner: str | None, reason: str
    ) -> None:
        tx.run(
            "insert_race",
            id=self.ids("race"),
            job_id=row["job_id"],
            attempt_id=row["id"],
            now=self._now(),
            payload_sha256=digest,
            winner_attempt_id=winner,
            reason=reason,
        )

    def list_races(self, owner_id: str, job_id: str) -> list[Race]:
        with self.reads() as tx:
            self._job_row(tx, owner_id, job_id)
            return [self._race(r) for r in tx.all("races_of_job", job_id=job_id)]

    # -- rows to entities ---------------------------------------------------------------------
    def _now(self) -> Any:
        return self._time_in(self.clock.now())

    def _new_job(self, owner_id: str, job_id: str, idempotency_key: str, intent: Intent,
                 now: datetime) -> Job:
        """The job an ``insert_job`` that returned a row just wrote, as reading it back would
        give it: the intent in its canonical representation (what the columns hold)."""
        canonical = intent.canonical_parts
        stored = Intent.trusted(
            contract=intent.contract,
            input=_parsed(canonical[0]) if canonical else intent.input,
            params=_parsed(canonical[1]) if canonical else intent.params,
            policy=intent.policy,
            fingerprint=intent.fingerprint,
        )
        return Job(id=job_id, owner_id=owner_id, idempotency_key=idempotency_key,
                   fingerprint=intent.fingerprint, intent=stored, status=JobStatus.PENDING,
                   version=1, completed_by=None, result=None, created_at=now, updated_at=now)

    def _job(self, owner_id: str, row: Row) -> Job:
        intent = Intent.trusted(
            contract=row["contract"],
            input=self._json_out(row["input"]),
            params=self._json_out(row["params"]),
            policy=Policy(**self._json_out(row["policy"])),
            fingerprint=row["fingerprint"],
        )
        result = row["result"]
        return Job(
            id=row["id"],
            owner_id=row["owner_id"],
            idempotency_key=row["idempotency_key"],
            fingerprint=row["fingerprint"],
            intent=intent,
            status=JobStatus(row["status"]),
            version=int(row["version"]),
            completed_by=row["completed_by"],
            result=self._json_out(result) if result is not None else None,
            created_at=self._time_out(row["created_at"]),
            updated_at=self._time_out(row["updated_at"]),
        )

    def _attempt(self, row: Row) -> Attempt:
        return Attempt(
            id=row["id"],
            job_id=row["job_id"],
            provider=row["provider"],
            state=AttemptState(row["state"]),
            read_version=int(row["read_version"]),
            outcome=ClaimOutcome(row["outcome"]) if row["outcome"] else None,
            error=self._json_out(row["error"]) if row["error"] is not None else None,
            result_sha256=row["result_sha256"],
            cancel_reason=row["cancel_reason"],
            created_at=self._time_out(row["created_at"]),
            updated_at=self._time_out(row["updated_at"]),
        )

    def _race(self, row: Row) -> Race:
        return Race(
            attempt_id=row["attempt_id"],
            job_id=row["job_id"],
            at=self._time_out(row["at"]),
            payload_sha256=row["payload_sha256"],
            winner_attempt_id=row["winner_attempt_id"],
            reason=row["reason"],
        )


def _parsed(text: str) -> Any:
    """A JSON column's text as Python (``{}``, the usual params, without the parser)."""
    return {} if text == "{}" else json.loads(text)


def dumps_json(value: Any) -> str:
    """Compact JSON text for TEXT columns (strict: no NaN)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

