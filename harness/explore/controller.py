"""The controller: run one plan, one SQL statement at a time, in the order a choice source picks.

Each racing client runs on its own :class:`~harness.explore.gate.Worker` (thread + session), so
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
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

from harness.domain.clock import EPOCH, ManualClock, rfc3339
from harness.domain.errors import HarnessError
from harness.domain.verdicts import JudgedStatus
from harness.explore.gate import IDLE, PARKED, RUNNING, Worker
from harness.explore.ops import Executor
from harness.explore.plan import OpSpec, Plan, TimerSpec
from harness.explore.sessions import Sessions, attach
from harness.scenarios.checkers import CheckResult, run_checkers, verdict_of
from harness.scenarios.history import History, Op
from harness.scenarios.targets.base import SequentialIds
from harness.scenarios.targets.stores import StoreSession
from harness.store.sqlstore import SqlStore

POLL_S = 0.001  # how often a running PostgreSQL statement is asked whether it waits on a lock
STUCK_S = 30.0


class Chooser(Protocol):
    """A choice source (:class:`harness.scenarios.scheduler.ChoiceSource`)."""

    def choose(self, enabled: Sequence[str]) -> int: ...


class Runner(Protocol):
    """What runs one schedule: :class:`Controller` (a store's statements) or
    :class:`~harness.explore.through.ThroughController` (a service's storage steps)."""

    def run(self, plan: Plan, choices: Chooser) -> Outcome: ...

    def following(self, recorded: list[dict[str, Any]] | None) -> AbstractContextManager[None]:
        """While replaying ``recorded``: wait as the recording needs (a no-op for a store)."""
        ...


class ExploreStuck(HarnessError):
    """The schedule cannot go on: nothing may run, yet a worker is not done.

    Exit 3, not 1: no promise was seen broken — the search could not go on (qa Q33: under load a
    correct service's schedule stalled and the run exited with the violation code)."""

    exit_code = 3


@dataclass
class Outcome:
    """One explored schedule: the plan, what ran, and the verdicts."""

    plan: Plan
    history: list[Op]
    schedule: list[dict[str, Any]]
    checks: list[CheckResult]
    status: JudgedStatus
    steps: int
    timers: int
    waits: int
    virtual_seconds: float
    elapsed_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return self.status == "violated"

    @property
    def broken(self) -> list[str]:
        """The checkers that found a violation."""
        return [c.checker for c in self.checks if c.verdict == "invalid"]

    def history_lines(self) -> list[str]:
        return [op.to_line() for op in self.history]


class Controller:
    """Explores schedules on one store; workers and sessions are reused between schedules."""

    def __init__(self, store: SqlStore, *, commit_steps: bool = False) -> None:
        self.store = store
        self.commit_steps = commit_steps
        self.sessions: Sessions = attach(store)
        self.sessions.commit_steps = commit_steps
        self.lock = threading.Lock()  # guards every worker's state
        self.cv = threading.Condition(self.lock)  # the controller waits here for news
        self.workers: list[Worker] = []
        self.run_id = secrets.token_hex(4)
        self.runs = 0
        self.now = 0.0
        self.waiting: dict[Worker, set[Worker]] = {}

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

    def close(self) -> None:
        with self.cv:
            for worker in self.workers:
                worker.stopping = True
                worker.cv.notify()
        for worker in self.workers:
            worker.thread.join(timeout=STUCK_S)
        self.sessions.close()

    def __enter__(self) -> Controller:
        return self

    def following(self, recorded: list[dict[str, Any]] | None) -> AbstractContextManager[None]:
        """A store's steps never wait on time: nothing to adjust for a replay."""
        return nullcontext()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- one schedule -------------------------------------------------------------------------
    def run(self, plan: Plan, choices: Chooser, *, max_steps: int = 10_000) -> Outcome:
        """Run ``plan`` once, asking ``choices`` whenever more than one thing may happen."""
        started = time.perf_counter()
        tag = f"{self.run_id}.{self.runs}"
        self.runs += 1
        clock = ManualClock(EPOCH)
        self.store.clock, self.store.ids = clock, SequentialIds(tag)
        self.now = 0.0
        history = History(now=lambda: (self.now, rfc3339(clock.now())))
        executor = Executor(plan, StoreSession(self.store), tag, history)
        for op in plan.setup:
            executor.inline(op)
        clients = plan.racing_clients()
        workers = self._workers(len(clients))
        by_client = dict(zip(clients, workers, strict=True))
        for client, worker in by_client.items():
            worker.client, worker.busy, worker.holds_write, worker.events = client, False, False, []
        schedule: list[dict[str, Any]] = []
        counts = {"steps": 0, "timers": 0, "waits": 0}
        try:
            for client, ops in sorted(plan.clients.items()):
                for op in ops:
                    self._enqueue(by_client[client], partial(_perform, by_client[client],
                                                             executor, op))
            self._settle(workers)
            self._flush(None, workers, executor)
            self._race(plan, choices, clock, by_client, executor, schedule, counts, max_steps)
        except BaseException:
            self._abort(workers)
            raise
        for op in plan.epilogue:
            executor.inline(op)
        checks = run_checkers(plan.checkers, history.ops)
        return Outcome(plan, history.ops, schedule, checks, verdict_of(checks), counts["steps"],
                       counts["timers"], counts["waits"], self.now,
                       time.perf_counter() - started)

    def _race(self, plan: Plan, choices: Chooser, clock: ManualClock,
              by_client: dict[str, Worker], executor: Executor,
              schedule: list[dict[str, Any]], counts: dict[str, int], max_steps: int) -> None:
        workers = list(by_client.values())
        timers = sorted(plan.timers, key=lambda t: (t.at, t.label))
        while True:
            options: list[tuple[str, Worker | TimerSpec]] = [
                (w.label or "", w) for w in self._enabled(workers)]
            if timers:
                soonest = timers[0].at
                options += [(t.label, t) for t in timers if t.at == soonest]
            if not options:
                if all(w.status == IDLE and not w.queue for w in workers):
                    return
                self._settle(workers, patient=True)  # e.g. PostgreSQL resolving a deadlock
                if not self._enabled(workers):
                    raise ExploreStuck(self._describe_stuck(workers))
                continue
            picked, entry = decide(options, choices, schedule, self.now)
            first: Worker | None = None
            if isinstance(picked, TimerSpec):
                timers.remove(picked)
                self.now = picked.at
                clock.set(EPOCH + timedelta(seconds=picked.at))
                target = by_client[picked.client]
                for op in picked.ops:
                    self._enqueue(target, partial(_perform, target, executor, op))
                entry["kind"] = "timer"
                counts["timers"] += 1
            else:
                counts["steps"] += 1
                if counts["steps"] > max_steps:
                    raise ExploreStuck(f"more than {max_steps} steps in one schedule")
                entry["kind"] = "step"
                entry["op"] = picked.doing
                first = picked
                with self.cv:
                    picked.granted = True
                    picked.cv.notify()
            self._settle(workers)
            if first is not None and (first.busy or first in self.waiting):
                entry["waited"] = True
                counts["waits"] += 1
            schedule.append(entry)
            self._flush(first, workers, executor)

    # -- what may run ---------------------------------------------------------------------------
    def _enabled(self, workers: list[Worker]) -> list[Worker]:
        """Parked workers that may take a step now (only lock holders while a step waits)."""
        parked = [w for w in workers if w.status == PARKED]
        waiting = dict(self.waiting)
        writers = [w for w in workers if w.holds_write]
        for w in parked:
            holders = {x for x in writers if x is not w}
            if w.busy and holders:
                waiting[w] = holders
        if not waiting:
            return sorted(parked, key=lambda w: w.client)
        holders = set().union(*waiting.values())
        return sorted((w for w in parked if w in holders and w not in waiting),
                      key=lambda w: w.client)

    def _settle(self, workers: list[Worker], *, patient: bool = False) -> None:
        """Wait until no worker moves: each is parked, idle, or waits on a database lock."""
        deadline = time.monotonic() + STUCK_S
        postgres = self.sessions.kind == "postgres"
        before = {w: w.status for w in workers} if patient else None
        while True:
            with self.cv:
                settled = self.cv.wait_for(
                    lambda: not any(w.unsettled() for w in workers),
                    timeout=POLL_S if postgres else STUCK_S)
                running = [w for w in workers if w.status == RUNNING]
                if settled and not running:
                    self.waiting = {}
                    self._check_errors(workers)
                    return
            if postgres and running and not any(w.unsettled() and w.status != RUNNING
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
            if time.monotonic() > deadline:
                raise ExploreStuck(self._describe_stuck(workers))

    @staticmethod
    def _changed(before: dict[Worker, str], workers: list[Worker]) -> bool:
        return any(w.status != before[w] for w in workers)

    def _check_errors(self, workers: list[Worker]) -> None:
        raise_worker_error(workers)

    def _flush(self, first: Worker | None, workers: list[Worker], executor: Executor) -> None:
        flush_events(first, workers, executor, self.cv)

    def _abort(self, workers: list[Worker]) -> None:
        """Unwind every worker's operation (their transactions roll back); wait until idle."""
        with self.cv:
            for worker in workers:
                worker.abort = True
                worker.queue.clear()
                worker.cv.notify()
            self.cv.wait_for(lambda: all(w.status == IDLE for w in workers), timeout=STUCK_S)
            for worker in workers:
                worker.abort = worker.busy = worker.holds_write = False
                worker.events[:] = []
                worker.error = None
        self.waiting = {}

    def _describe_stuck(self, workers: list[Worker]) -> str:
        states = ", ".join(f"{w.client}={w.status}" + (f" at {w.label}" if w.label else "")
                           for w in workers)
        return f"the schedule is stuck at virtual time {self.now:g} s: {states}"


def decide(options: Sequence[tuple[str, Any]], choices: Chooser,
           schedule: list[dict[str, Any]], now: float) -> tuple[Any, dict[str, Any]]:
    """Ask ``choices`` among ``options`` (labels and what they stand for; none asked when there
    is one), tell it what was picked, and start the picked event's schedule entry."""
    labels = [label for label, _ in options]
    index = choices.choose(labels) if len(options) > 1 else 0
    label, picked = options[index]
    observe = getattr(choices, "observe", None)
    if observe is not None:
        observe(label)
    entry: dict[str, Any] = {"n": len(schedule), "time": now, "event": label}
    if len(options) > 1:
        entry["enabled"] = labels
    return picked, entry


def raise_worker_error(workers: Iterable[Worker]) -> None:
    """Re-raise the first error a worker's operation raised (and forget it)."""
    for worker in workers:
        if worker.error is not None:
            error, worker.error = worker.error, None
            raise error


def flush_events(first: Worker | None, workers: Iterable[Worker], executor: Executor,
                 cv: threading.Condition) -> None:
    """Write the workers' buffered events to the history: ``first`` first, then by client."""
    order = ([first] if first else []) + sorted((w for w in workers if w is not first),
                                                key=lambda w: w.client)
    for worker in order:
        with cv:
            events, worker.events[:] = list(worker.events), []
        for event in events:
            executor.record(event)


def _perform(worker: Worker, executor: Executor, op: OpSpec) -> None:
    worker.doing = op.describe()
    executor.perform(op, worker.events)


def run_once(store: SqlStore, plan: Plan, choices: Chooser) -> Outcome:
    """Run ``plan`` once on ``store`` with a controller of its own."""
    with Controller(store) as controller:
        return controller.run(plan, choices)

