"""The controller: run one plan, one SQL statement at a time, in the order a choice source picks.

Each racing client runs on its own :class:`~harness.explore.hold.Worker` (thread + session), so
transactions really overlap inside the database. The controller loop:

1. *settle*: wait until every worker is parked at a statement, idle, or waiting on a lock inside
   the database (PostgreSQL: ``pg_blocking_pids``; SQLite never waits: BUSY parks the worker);
2. write the workers' buffered events to the history, the granted worker first, then by client;
3. list what may happen next — a parked worker's statement, or the earliest virtual timer — and
   ask the choice source; grant that statement, or fire the timer (the clock jumps; database
   calls take no virtual time).

While a step waits on a lock, only the transactions it waits for may take steps, so a second
step never joins the queue for the same lock and the database never picks the order (as
PostgreSQL's isolation tester does). The same plan and choices give the same history, byte for
byte.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any

from harness.domain.clock import ManualClock
from harness.explore.hold import IDLE, PARKED, RUNNING, Worker
from harness.explore.loop import (
    POLL_S,
    PROBE_MAX_S,
    STUCK_S,
    Chooser,
    ExploreStuck,
    Runner,
    ScheduleLoop,
    ScheduleRun,
    client_name,
    flush_events,
    perform,
    raise_worker_error,
)
from harness.explore.ops import Executor
from harness.explore.plan import Plan, TimerSpec
from harness.explore.sessions import Sessions, attach
from harness.scenarios.history import History
from harness.scenarios.targets.base import SequentialIds
from harness.scenarios.targets.stores import StoreSession
from harness.store.sqlstore import SqlStore

__all__ = ["Chooser", "Controller", "ExploreStuck", "Runner", "ScheduleRun", "run_once"]


class Controller(ScheduleLoop):
    """Explores schedules on one store (the store driver of :class:`ScheduleLoop`); workers
    and sessions are reused between schedules."""

    MAX_STEPS = 10_000

    def __init__(self, store: SqlStore, *, commit_steps: bool = False) -> None:
        super().__init__(secrets.token_hex(4))
        self.store = store
        self.commit_steps = commit_steps
        self.sessions: Sessions = attach(store)
        self.sessions.commit_steps = commit_steps
        self.waiting: dict[Worker, set[Worker]] = {}

    def __enter__(self) -> Controller:
        return self

    def following(self, recorded: list[dict[str, Any]] | None) -> AbstractContextManager[None]:
        """A store's steps never wait on time: nothing to adjust for a replay."""
        return nullcontext()

    # -- workers ----------------------------------------------------------------------------------
    def _workers(self, n: int) -> list[Worker]:
        while len(self.workers) < n:
            worker = Worker(len(self.workers), self.lock, self.cv)
            worker.thread.start()
            self.workers.append(worker)
            if self.sessions.kind == "postgres":
                self.sessions.open(worker)
            else:  # SQLite connections belong to their thread: open it there, before any race
                self._enqueue(worker, self.store.connection)  # type: ignore[attr-defined]
                self._settle([worker])
        return self.workers[:n]

    def _enqueue(self, worker: Worker, job: Callable[[], Any]) -> None:
        with self.cv:
            worker.queue.append(job)
            worker.cv.notify()

    def _close_resources(self) -> None:
        self.sessions.close()

    # -- one schedule (the loop's hooks) ------------------------------------------------------
    def _executor(self, plan: Plan, tag: str, clock: ManualClock, history: History) -> Executor:
        self.store.clock, self.store.ids = clock, SequentialIds(tag)
        return Executor(plan, StoreSession(self.store), tag, history)

    def _begin(self, by_client: dict[str, Worker]) -> None:
        for client, worker in by_client.items():
            worker.client, worker.busy, worker.holds_write, worker.events = client, False, False, []

    def _send(self, plan: Plan, by_client: dict[str, Worker], executor: Executor,
              schedule: list[dict[str, Any]], counts: dict[str, int]) -> None:
        with self.cv:  # every client's operations queued at once, each worker woken once
            for client, ops in sorted(plan.clients.items()):
                worker = by_client[client]
                worker.queue.extend(partial(perform, worker, executor, op) for op in ops)
                worker.cv.notify()
        workers = list(by_client.values())
        self._settle(workers)
        self._flush(None, workers, executor)

    def _options(self, workers: list[Worker], timers: list[TimerSpec]) -> list[tuple[str, Any]]:
        options: list[tuple[str, Worker | TimerSpec]] = [
            (w.label or "", w) for w in self._enabled(workers)]
        if timers:
            soonest = timers[0].at
            options += [(t.label, t) for t in timers if t.at == soonest]
        return options

    def _done(self, workers: list[Worker]) -> bool:
        return all(w.status == IDLE and not w.queue for w in workers)

    def _patient(self, workers: list[Worker], timers: list[TimerSpec]) -> bool:
        self._settle(workers, patient=True)  # e.g. PostgreSQL resolving a deadlock
        return bool(self._enabled(workers)) or self._done(workers)

    def _is_step(self, picked: Any) -> bool:
        return True

    def _grant(self, picked: Any, workers: list[Worker], clock: ManualClock,
               entry: dict[str, Any]) -> Worker:
        entry["kind"] = "step"
        entry["op"] = picked.doing
        with self.cv:
            picked.granted = True
            picked.cv.notify()
        return picked

    def _settled(self, workers: list[Worker]) -> list[str]:
        self._settle(workers)
        return []

    def _waited(self, worker: Worker) -> bool:
        return worker.busy or worker in self.waiting

    def _reset(self, worker: Worker) -> None:
        worker.abort = worker.busy = worker.holds_write = False

    def _forget(self, workers: list[Worker]) -> None:
        self.waiting = {}

    # -- what may run ---------------------------------------------------------------------------
    def _enabled(self, workers: list[Worker]) -> list[Worker]:
        """Parked workers that may take a step now (only lock holders while a step waits)."""
        parked = [w for w in workers if w.status == PARKED]
        waiting = self.waiting
        busy = [w for w in parked if w.busy]  # SQLite: a retry after SQLITE_BUSY
        if busy:
            writers = [w for w in workers if w.holds_write]
            waiting = dict(waiting)
            for w in busy:
                holders = {x for x in writers if x is not w}
                if holders:
                    waiting[w] = holders
        if not waiting:
            return sorted(parked, key=client_name)
        holders = set().union(*waiting.values())
        return sorted((w for w in parked if w in holders and w not in waiting), key=client_name)

    def _settle(self, workers: list[Worker], *, patient: bool = False) -> None:
        """Wait until no worker moves: each is parked, idle, or waits on a database lock.

        PostgreSQL: a running statement is asked about (``pg_blocking_pids``) only while another
        worker's session may hold a lock (a transaction open); then after 1 ms, and twice as
        long after each answer that it does not wait (up to :data:`PROBE_MAX_S`)."""
        deadline = time.monotonic() + STUCK_S
        postgres = self.sessions.kind == "postgres"
        before = {w: w.status for w in workers} if patient else None
        interval = POLL_S
        while True:
            with self.cv:
                probing = postgres and self._may_wait(workers)
                settled = self.cv.wait_for(
                    lambda: not any(w.unsettled() for w in workers),
                    timeout=interval if probing else max(0.0, deadline - time.monotonic()))
                running = [w for w in workers if w.status == RUNNING]
                if settled and not running:
                    self.waiting = {}
                    self._check_errors(workers)
                    return
            if probing and running and not any(w.unsettled() and w.status != RUNNING
                                               for w in workers):
                blockers = self.sessions.probe(running)
                if all(blockers[w] for w in running):
                    with self.cv:
                        still = [w for w in workers if w.unsettled()]
                    if still == running and (before is None or time.monotonic() >= deadline
                                             or self._changed(before, workers)):
                        by_pid = {w.pid: w for w in workers}
                        self.waiting = {w: {by_pid[p] for p in blockers[w] if p in by_pid}
                                        for w in running}
                        return
                else:
                    interval = min(interval * 2, PROBE_MAX_S)
            if time.monotonic() > deadline:
                raise ExploreStuck(self._describe_stuck(workers))

    def _may_wait(self, workers: list[Worker]) -> bool:
        """Could a moving worker (running, or granted and not yet awake) wait on a lock of
        another worker? Only while that other worker's session has a transaction open. A
        session takes locks only in a granted statement, inside a transaction it marked open
        before it parked; so no lock holder appears while the controller waits (the lock is
        held)."""
        holders = [w for w in self.workers if w.conn is not None and w.conn.may_hold_locks]
        return any(w.unsettled() and any(h is not w for h in holders) for w in workers)

    @staticmethod
    def _changed(before: dict[Worker, str], workers: list[Worker]) -> bool:
        return any(w.status != before[w] for w in workers)

    def _check_errors(self, workers: list[Worker]) -> None:
        raise_worker_error(workers)

    def _flush(self, first: Worker | None, workers: list[Worker], executor: Executor) -> None:
        flush_events(first, workers, executor, self.cv)

    def _describe_stuck(self, workers: list[Worker]) -> str:
        states = ", ".join(f"{w.client}={w.status}" + (f" at {w.label}" if w.label else "")
                           for w in workers)
        return f"the schedule is stuck at virtual time {self.now:g} s: {states}"


def run_once(store: SqlStore, plan: Plan, choices: Chooser) -> ScheduleRun:
    """Run ``plan`` once on ``store`` with a controller of its own."""
    with Controller(store) as controller:
        return controller.run(plan, choices)
