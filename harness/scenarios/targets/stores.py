"""In-process store targets: the reference store or a mutant, on SQLite or PostgreSQL.

The store runs on the engine's virtual clock and deterministic ids, and answers exactly like the
reference service would (status codes and problem details of API.md), so the engine treats it
like any HTTP target.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.domain import (
    EventType,
    HarnessError,
    StoreError,
    UnsupportedTarget,
    intent_of,
)
from harness.domain.clock import ManualClock
from harness.domain.errors import ConfigError
from harness.scenarios.targets.base import Reply, SequentialIds, Target, TargetSession, redact
from harness.store import SqlStore, apply_event, open_store
from harness.store.mutants import MUTANTS, open_mutant

STORE_CAPABILITIES = frozenset({"jobs", "attempts", "timeouts", "hedge", "owners"})


def _problem(exc: HarnessError) -> Reply:
    return Reply(exc.http_status, exc.to_problem())


def _answer(call: Callable[[], tuple[int, Any]]) -> Reply:
    try:
        status, body = call()
    except HarnessError as exc:
        return _problem(exc)
    except Exception as exc:  # a store bug is a 500 for the history, not a harness crash
        return Reply(500, {"status": 500, "code": "internal_error",
                           "detail": f"{type(exc).__name__}: {exc}"})
    return Reply(status, body)


class StoreSession(TargetSession):
    """API-shaped answers from a :class:`SqlStore` (reference or mutant)."""

    def __init__(self, store: SqlStore, run_id: str = "") -> None:
        self.store = store
        self.run_id = run_id

    def count_side_effects(self) -> int:
        """The side effects this run's clicks made: a store runs no handler, so a click's one
        effect is the job it inserts (the detection suite's counter; a store that inserts two
        jobs for one click shows here even when both answers name one). Counted by the run's
        job ids (``job_<run>_<n>``), so runs sharing the database do not mix."""
        prefix = f"job_{self.run_id}_"
        with self.store.reads() as tx:
            row = tx.one("jobs_with_id_prefix", prefix=prefix, prefix_length=len(prefix))
        return int(row["n"]) if row is not None else 0

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        def call() -> tuple[int, Any]:
            result = self.store.create_job(owner, key, intent_of(body_text))
            return (201 if result.created else 200), result.job.to_json()

        reply = _answer(call)
        # the service would send Idempotent-Replayed: true exactly on a 200 replay (API.md)
        return replace(reply, replayed=reply.status == 200) if reply.ok else reply

    def get_job(self, owner: str, job_id: str) -> Reply:
        return _answer(lambda: (200, self.store.get_job(owner, job_id).to_json()))

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
        return _answer(lambda: (201, self.store.start_attempt(owner, job_id, provider).to_json()))

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply:
        def call() -> tuple[int, Any]:
            result = apply_event(self.store, owner, attempt_id, EventType(event["type"]), event)
            body = result.attempt.to_json()
            if result.outcome is not None:
                body["outcome"] = result.outcome.value
            return 200, body

        return _answer(call)

    def list_attempts(self, owner: str, job_id: str) -> Reply:
        return _answer(
            lambda: (200, [a.to_json() for a in self.store.list_attempts(owner, job_id)])
        )

    def list_races(self, owner: str, job_id: str) -> Reply:
        return _answer(lambda: (200, [r.to_json() for r in self.store.list_races(owner, job_id)]))


class StoreTarget(Target):
    """``sqlite`` (a temporary file, removed by :meth:`close`), ``sqlite:///…``,
    ``postgresql://…``, and ``mutant:<name>[@<database URL>]``. The database is opened once and
    shared by the runs, which never see each other (keys and ids are unique per run); the
    store's clock and ids are swapped for each run."""

    # side_effects: a store runs no handler, so the one thing a click makes is its job row, which
    # the store target counts (StoreSession.count_side_effects)
    capabilities = STORE_CAPABILITIES | {"side_effects"}
    race_digest = "sha256-rfc8785"  # the reference store's payload digest (harness.domain)
    counts_side_effects_when_judged = True

    def __init__(self, url: str | None, *, mutant: str | None = None) -> None:
        self.url = url
        self.mutant = mutant
        if mutant is not None and mutant not in MUTANTS:
            raise UnsupportedTarget(
                f"no mutant named {mutant!r}; write mutant:<name> with one of: "
                f"{', '.join(MUTANTS)}"
            )
        backend = "postgres" if url and url.startswith("postgres") else "sqlite"
        self.kind = "mutant" if mutant else backend
        self.backend = backend
        self._store: SqlStore | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    @property
    def description(self) -> str:
        base = redact(self.url) if self.url else "sqlite"
        if self.mutant:
            return f"mutant:{self.mutant}" + (f"@{base}" if self.url else "")
        return base

    def _open(self, url: str, **options: Any) -> SqlStore:
        if url.startswith("postgres"):
            options.setdefault("pool_size", 40)
        if self.mutant:
            return open_mutant(self.mutant, url, **options)
        return open_store(url, **options)

    @contextmanager
    def session(
        self, clock: ManualClock, run_id: str, concurrency: int
    ) -> Iterator[TargetSession]:
        ids = SequentialIds(run_id)
        if self._store is None:
            url = self.url
            if url is None:
                self._folder = tempfile.TemporaryDirectory(prefix="harness-target-")
                url = f"sqlite:///{Path(self._folder.name) / 'target.db'}"
            try:
                self._store = self._open(url, clock=clock, ids=ids)
            except StoreError as exc:
                raise ConfigError(
                    f"cannot open the target database: {exc.message}", field="--target",
                    fix="check that the database is running and the URL is right",
                ) from None
        store = self._store
        store.clock, store.ids = clock, ids
        yield StoreSession(store, run_id)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
