"""Mutants: the reference store with exactly one deliberate bug each, for the detection matrix.

Each mutant is a mixin that overrides one method of :class:`SqlStore` to break one rule of
DESIGN.md, and is combined with the SQLite or the PostgreSQL store at open time, so the same bug
runs on both databases. The scenario engine must catch every mutant with at least one scenario
and the reference store with none (``tests/scenarios/test_matrix.py``).

::

    check-then-insert     rule 1: reads the key, then inserts in a second transaction
    no-fingerprint        rule 2: the same key with another body replays the first job
    timeout-marks-failed  rule 6: a timeout fails the attempt, freeing its slot
    no-attempt-gate       rule 5: ignores the job's policy: a second attempt may open
    last-write-wins       rule 7: the claim has no version / completed_by guard
    cancelled-can-win     rule 7: a cancelled attempt's late result still claims
    owner-leak            rule 3: another owner's job is readable by id
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.domain import (
    Attempt,
    AttemptState,
    ClaimOutcome,
    CreateResult,
    EventResult,
    EventType,
    Intent,
    InvalidTransition,
    JobCompleted,
    JobStatus,
    NotFound,
    UnsupportedTarget,
    next_state,
    payload_digest,
    validate_idempotency_key,
)
from harness.domain.errors import AttemptInFlight
from harness.domain.redaction import redact_dsn
from harness.domain.states import JOB_FINAL_STATUSES
from harness.store.postgres import PostgresStore, to_pyformat
from harness.store.queries import load_queries
from harness.store.sqlite import SqliteStore, sqlite_path_from_url
from harness.store.sqlstore import Row, SqlStore, Tx


def _sql(store: SqlStore, name: str, old: str, new: str) -> str:
    """Query ``name`` with ``old`` replaced by ``new``, in the store's parameter style.

    Fails loudly if ``old`` is absent, so an edit of queries.sql can never silently turn a
    mutant back into the reference store.
    """
    text = load_queries(store.for_update)[name]
    if old not in text:
        raise RuntimeError(f"mutant SQL: {old!r} not found in query {name!r}")
    text = text.replace(old, new)
    if store.backend == "postgres":
        text = to_pyformat(text)
    return text


def _run(tx: Tx, sql: str, params: Mapping[str, Any]) -> tuple[list[Row], int]:
    """Run one ad-hoc statement in ``tx`` through the dialect's own Tx class."""
    once = type(tx)(tx.conn, {"mutant": sql})  # type: ignore[call-arg, attr-defined]
    return once.execute("mutant", params)


class _Rendezvous:
    """Holds a caller between its check and its insert until a concurrent twin has checked too.

    Real check-then-insert code does work between the two (renders, calls, logs); SQLite
    serialises writers so quickly that the race would be hit only now and then. Waiting for the
    twin (at most ``window_s``) makes the bug show every time a scenario sends concurrent
    duplicates, and costs a lone caller ``window_s`` once. Never used by the reference store.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.checked: dict[Hashable, int] = {}

    def meet(self, key: Hashable, window_s: float) -> None:
        with self.cond:
            self.checked[key] = self.checked.get(key, 0) + 1
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.checked[key] >= 2, timeout=window_s)

    def leave(self, key: Hashable) -> None:
        with self.cond:
            self.checked[key] -= 1
            if not self.checked[key]:
                del self.checked[key]


_TWINS = _Rendezvous()


class CheckThenInsert:
    """Rule 1 broken: a read, then an insert in another transaction (no insert-or-conflict)."""

    race_window_s = 0.05

    def create_job(
        self: Any, owner_id: str, idempotency_key: str, intent: Intent
    ) -> CreateResult:
        validate_idempotency_key(idempotency_key)
        fp = intent.fingerprint
        with self.transaction(write=False) as tx:
            existing = tx.one("job_by_key", owner_id=owner_id, idempotency_key=idempotency_key)
        if existing is not None:
            return self._replay(owner_id, existing, fp)
        sql = _sql(self, "insert_job", "ON CONFLICT (owner_id, idempotency_key) DO NOTHING", "")
        twin = (id(self), owner_id, idempotency_key)
        _TWINS.meet(twin, self.race_window_s)
        job_id, now = self.ids("job"), self.clock.now()
        try:
            with self.transaction() as tx:
                _run(tx, sql, dict(
                    id=job_id, owner_id=owner_id, idempotency_key=idempotency_key,
                    fingerprint=fp, contract=intent.contract, **self._intent_in(intent),
                    max_open_attempts=intent.policy.max_open_attempts, now=self._time_in(now),
                ))
        finally:
            _TWINS.leave(twin)
        return CreateResult(self._new_job(owner_id, job_id, idempotency_key, intent, now),
                            created=True)


class NoFingerprint:
    """Rule 2 broken: the same key with another body replays the first job instead of 409."""

    def _replay(self: Any, owner_id: str, row: Row, fp: str) -> CreateResult:
        return CreateResult(self._job(owner_id, row), created=False)


class TimeoutMarksFailed:
    """Rule 6 broken: a timeout fails the attempt (the outcome is really unknown)."""

    def time_out(self: Any, owner_id: str, attempt_id: str) -> Attempt:
        return self._move(
            owner_id, attempt_id, EventType.FAILED,
            error={"code": "timeout", "message": "the provider did not answer in time"},
        )


class NoAttemptGate:
    """Rule 5 broken: the job's policy is not consulted; any free slot opens an attempt."""

    def start_attempt(self: Any, owner_id: str, job_id: str, provider: str) -> Attempt:
        sql = _sql(self, "insert_attempt", "AND :slot <= j.max_open_attempts", "")
        with self.transaction() as tx:
            job = self._job_row(tx, owner_id, job_id)
            if JobStatus(job["status"]) in JOB_FINAL_STATUSES:
                raise JobCompleted(f"job {job_id} is {job['status']}; it takes no new attempts")
            for slot in (1, 2):
                rows, _ = _run(tx, sql, dict(
                    id=self.ids("att"), job_id=job_id, owner_id=owner_id, provider=provider,
                    slot=slot, now=self._now(),
                ))
                if rows:
                    tx.run("mark_job_running", job_id=job_id, now=self._now())
                    return self._attempt(rows[0])
            blockers = tx.all("open_attempts", job_id=job_id)
        raise AttemptInFlight(blocking_attempt_id=blockers[0]["id"] if blockers else "unknown")


class LastWriteWins:
    """Rule 7 broken: the claim overwrites whatever result the job holds."""

    def _claim(
        self: Any, tx: Tx, owner_id: str, row: Row, result: Any, digest: str
    ) -> ClaimOutcome:
        sql = _sql(
            self, "claim_result",
            "WHERE id = :job_id AND version = :read_version AND completed_by IS NULL",
            "WHERE id = :job_id",
        )
        _, count = _run(tx, sql, dict(
            job_id=row["job_id"], attempt_id=row["id"], result=self._json_in(result),
            now=self._now(),
        ))
        return ClaimOutcome.WON if count == 1 else ClaimOutcome.LOST


class CancelledCanWin:
    """Rule 7 broken: a result reaching a cancelled attempt still runs the claim."""

    def succeed(self: Any, owner_id: str, attempt_id: str, result: Any) -> EventResult:
        digest = payload_digest(result)
        with self.transaction() as tx:
            row = self._attempt_row(tx, owner_id, attempt_id)
            current = AttemptState(row["state"])
            if current is AttemptState.SUCCEEDED:
                if row["result_sha256"] == digest:
                    return EventResult(self._attempt(row), ClaimOutcome(row["outcome"]))
                raise InvalidTransition(
                    from_state=current.value, to_state="succeeded", event="succeeded"
                )
            if current is not AttemptState.CANCELLED:  # the bug: cancelled is not refused
                next_state(current, EventType.SUCCEEDED)
            outcome = self._claim(tx, owner_id, row, result, digest)
            moved = self._write_state(
                tx, row, AttemptState.SUCCEEDED, outcome=outcome, result_sha256=digest
            )
            return EventResult(self._attempt(moved), outcome)


class OwnerLeak:
    """Rule 3 broken: a job is found by id alone, whoever asks."""

    def _job_row(self: Any, tx: Tx, owner_id: str, job_id: str) -> Row:
        sql = _sql(self, "job_by_id", "AND owner_id = :owner_id", "")
        rows, _ = _run(tx, sql, {"job_id": job_id})
        if not rows:
            raise NotFound(f"job {job_id} not found")
        return rows[0]


@dataclass(frozen=True, slots=True)
class MutantInfo:
    """A mutant: its name, the mixin holding its one overridden method, the rule it breaks."""

    name: str
    mixin: type
    rule: str


MUTANTS: dict[str, MutantInfo] = {
    info.name: info
    for info in (
        MutantInfo("check-then-insert", CheckThenInsert, "rule 1: insert-or-conflict"),
        MutantInfo("no-fingerprint", NoFingerprint, "rule 2: same key, other body → 409"),
        MutantInfo("timeout-marks-failed", TimeoutMarksFailed, "rule 6: a timeout is unknown"),
        MutantInfo("no-attempt-gate", NoAttemptGate, "rule 5: at most one open attempt"),
        MutantInfo("last-write-wins", LastWriteWins, "rule 7: the guarded claim"),
        MutantInfo("cancelled-can-win", CancelledCanWin, "rule 7: a cancelled attempt never wins"),
        MutantInfo("owner-leak", OwnerLeak, "rule 3: another owner's job is 404"),
    )
}


def mutant_class(name: str, base: type[SqlStore]) -> type[SqlStore]:
    """The store class ``base`` with mutant ``name``'s bug."""
    info = MUTANTS.get(name)
    if info is None:
        raise UnsupportedTarget(
            f"no mutant named {name!r}; the mutants are: {', '.join(MUTANTS)}"
        )
    cls: type[SqlStore] = type(
        f"{info.mixin.__name__}{base.__name__}", (info.mixin, base),
        {"mutant": name, "__doc__": info.mixin.__doc__},
    )
    return cls


def open_mutant(name: str, url: str, **options: Any) -> SqlStore:
    """Open mutant ``name`` on the database at ``url`` (``sqlite:///…`` or ``postgresql://…``)."""
    if url.startswith("sqlite:"):
        cls = mutant_class(name, SqliteStore)
        return cls(sqlite_path_from_url(url), **options)  # type: ignore[call-arg, arg-type]
    if url.startswith(("postgresql://", "postgres://")):
        cls = mutant_class(name, PostgresStore)
        return cls(url, **options)  # type: ignore[call-arg, arg-type]
    raise UnsupportedTarget(
        f"unsupported database URL {redact_dsn(url)!r} for a mutant; write "
        f"mutant:{name}@sqlite:///file.db or mutant:{name}@postgresql://user@host:port/dbname"
    )


__all__ = ["MUTANTS", "MutantInfo", "mutant_class", "open_mutant"]
