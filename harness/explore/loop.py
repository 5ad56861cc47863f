"""The schedule loop both explore controllers share, and what they share it with.

One plan, run once: its setup, then each racing client on a :class:`~harness.explore.hold.Worker`
of its own, then the race — list what may happen next, ask the choice source, grant or fire it,
settle, write the workers' buffered events to the history (the granted worker first) — then the
epilogue and the checks. A *driver* says what "may happen" and "settled" mean:
:class:`~harness.explore.controller.Controller` for our store (a parked SQL statement) and
:class:`~harness.explore.through.ThroughController` for a service (a storage step held at the
proxy, a parked retry). The same plan and choices give the same history, byte for byte.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from operator import attrgetter
from typing import Any, Protocol

from harness.domain.clock import EPOCH, ManualClock, rfc3339
from harness.domain.errors import HarnessError
from harness.domain.verdicts import Promise
from harness.explore.hold import IDLE, Worker
from harness.explore.ops import Executor
from harness.explore.plan import OpSpec, Plan, TimerSpec
from harness.scenarios.checkers import CheckResult, run_checkers, verdict_of
from harness.scenarios.history import History, Op

POLL_S = 0.001  # how soon a running PostgreSQL statement is first asked whether it waits on a lock
PROBE_MAX_S = 0.016  # the longest pause between two such questions (each one doubles it)
STUCK_S = 30.0  # how long a worker, a settle or a shutdown may take before the schedule is stuck
client_name = attrgetter("client")  # a sort key: workers by their client


class Chooser(Protocol):
    """A choice source (:class:`harness.scenarios.scheduler.ChoiceSource`)."""

    def choose(self, enabled: Sequence[str]) -> int: ...


class Runner(Protocol):
    """What runs one schedule: :class:`~harness.explore.controller.Controller` (a store's
    statements) or :class:`~harness.explore.through.ThroughController` (a service's steps)."""

    def run(self, plan: Plan, choices: Chooser) -> ScheduleRun: ...

    def following(self, recorded: list[dict[str, Any]] | None) -> AbstractContextManager[None]:
        """While replaying ``recorded``: wait as the recording needs (a no-op for a store)."""
        ...


class ExploreStuck(HarnessError):
    """The schedule cannot go on: nothing may run, yet a worker is not done.

    Exit 3, not 1: no promise was seen broken — the search could not go on (qa Q33: under load a
    correct service's schedule stalled and the run exited with the violation code)."""

    exit_code = 3


@dataclass
class ScheduleRun:
    """One explored schedule: the plan, what ran, and the verdicts."""

    plan: Plan
    history: list[Op]
    schedule: list[dict[str, Any]]
    checks: list[CheckResult]
    status: Promise
    steps: int
    timers: int
    waits: int
    virtual_seconds: float
    elapsed_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return self.status == "broken"

    @property
    def broken(self) -> list[str]:
        """The checkers that found a violation."""
        return [c.checker for c in self.checks if c.verdict == "broken"]

    def history_lines(self) -> list[str]:
        return [op.to_line() for op in self.history]


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
                                                key=client_name)
    with cv:  # one look under the lock for all: most workers have nothing after a step
        batches = [worker.events[:] for worker in order if worker.events]
        for worker in order:
            worker.events.clear()
    for events in batches:
        for event in events:
            executor.record(event)


def perform(worker: Worker, executor: Executor, op: OpSpec) -> None:
    worker.doing = op.describe()
    executor.perform(op, worker.events)


class ScheduleLoop(ABC):
    """The loop of one schedule; a driver subclasses it and fills in the hooks below."""

    MAX_STEPS = 10_000
    #: a fired timer moves its client (its ops are that client's next request)
    TIMER_MOVES_CLIENT = False

    def __init__(self, run_id: str) -> None:
        self.lock = threading.Lock()  # guards every worker's state
        self.cv = threading.Condition(self.lock)  # the controller waits here for news
        self.workers: list[Worker] = []
        self.run_id = run_id
        self.runs = 0
        self.now = 0.0

    # -- what a driver says (abstract), and what it may add (no-ops here) ------------------------
    @abstractmethod
    def _executor(self, plan: Plan, tag: str, clock: ManualClock, history: History) -> Executor:
        """The executor of this schedule's operations (called before the plan's setup)."""

    @abstractmethod
    def _workers(self, n: int) -> list[Worker]: ...

    @abstractmethod
    def _enqueue(self, worker: Worker, job: Any) -> None: ...

    @abstractmethod
    def _begin(self, by_client: dict[str, Worker]) -> None:
        """Each worker takes its client; the driver forgets the previous schedule."""

    @abstractmethod
    def _send(self, plan: Plan, by_client: dict[str, Worker], executor: Executor,
              schedule: list[dict[str, Any]], counts: dict[str, int]) -> None:
        """Give each client its operations, and settle before the race."""

    @abstractmethod
    def _options(self, workers: list[Worker], timers: list[TimerSpec]) -> list[tuple[str, Any]]:
        """What may happen next, by label (the soonest timers among them)."""

    @abstractmethod
    def _done(self, workers: list[Worker]) -> bool: ...

    @abstractmethod
    def _patient(self, workers: list[Worker], timers: list[TimerSpec]) -> bool:
        """Nothing may run, yet not every worker is done: wait for a change (False: none)."""

    @abstractmethod
    def _is_step(self, picked: Any) -> bool:
        """Does ``picked`` count as a step (against ``max_steps``)?"""

    @abstractmethod
    def _grant(self, picked: Any, workers: list[Worker], clock: ManualClock,
               entry: dict[str, Any]) -> Worker:
        """Let ``picked`` happen (a statement, a held step, a parked retry): its worker."""

    @abstractmethod
    def _settled(self, workers: list[Worker]) -> list[str]:
        """Wait until nothing moves; the clients still moving when the wait ran out."""

    @abstractmethod
    def _waited(self, worker: Worker) -> bool: ...

    @abstractmethod
    def _flush(self, first: Worker | None, workers: list[Worker], executor: Executor) -> None: ...

    @abstractmethod
    def _reset(self, worker: Worker) -> None:
        """A worker's schedule state, cleared after an abort."""

    @abstractmethod
    def _forget(self, workers: list[Worker]) -> None:
        """The driver's schedule state, cleared after an abort (the lock is held)."""

    @abstractmethod
    def _describe_stuck(self, workers: list[Worker]) -> str: ...

    def _end(self) -> None:  # noqa: B027 - an optional hook
        """The schedule is over (or aborted)."""

    def _observe(self, history: History, moment: str) -> None:  # noqa: B027 - an optional hook
        """Read a side-effect counter into the history at ``moment`` (start | end)."""

    def _meta(self, counts: dict[str, int]) -> dict[str, Any]:
        return {}

    def _release(self) -> None:  # noqa: B027 - an optional hook
        """Let everything held go through (the lock is held): before an abort or a close."""

    def _close_resources(self) -> None:  # noqa: B027 - an optional hook
        """Close what the driver opened (sessions, connections)."""

    # -- one schedule ---------------------------------------------------------------------------
    def run(self, plan: Plan, choices: Chooser, *, max_steps: int | None = None) -> ScheduleRun:
        """Run ``plan`` once, asking ``choices`` whenever more than one thing may happen."""
        started = time.perf_counter()
        tag = f"{self.run_id}.{self.runs}"
        self.runs += 1
        clock = ManualClock(EPOCH)
        self.now = 0.0
        history = History(now=partial(self._stamp, clock, [None, ""]))
        executor = self._executor(plan, tag, clock, history)
        for op in plan.setup:
            executor.inline(op)
        self._observe(history, "start")
        clients = plan.racing_clients()
        workers = self._workers(len(clients))
        by_client = dict(zip(clients, workers, strict=True))
        self._begin(by_client)
        schedule: list[dict[str, Any]] = []
        counts = {"steps": 0, "timers": 0, "waits": 0, "expired": 0}
        try:
            self._send(plan, by_client, executor, schedule, counts)
            self._race(plan, choices, clock, by_client, executor, schedule, counts,
                       self.MAX_STEPS if max_steps is None else max_steps)
        except BaseException:
            self._abort(workers)
            raise
        finally:
            self._end()
        for op in plan.epilogue:
            executor.inline(op)
        self._observe(history, "end")
        checks = run_checkers(plan.checkers, history.ops)
        return ScheduleRun(plan, history.ops, schedule, checks, verdict_of(checks), counts["steps"],
                       counts["timers"], counts["waits"], self.now,
                       time.perf_counter() - started, self._meta(counts))

    def _stamp(self, clock: ManualClock, last: list[Any]) -> tuple[float, str]:
        """A new history op's (virtual seconds, wall-clock text); the text is formatted once
        per clock reading (``last``: the previous reading and its text)."""
        when = clock.now()
        if when != last[0]:
            last[:] = when, rfc3339(when)
        return self.now, last[1]

    def _race(self, plan: Plan, choices: Chooser, clock: ManualClock,
              by_client: dict[str, Worker], executor: Executor,
              schedule: list[dict[str, Any]], counts: dict[str, int], max_steps: int) -> None:
        workers = list(by_client.values())
        timers = sorted(plan.timers, key=lambda t: (t.at, t.label))
        while True:
            options = self._options(workers, timers)
            if not options:
                if self._done(workers):
                    return
                if not self._patient(workers, timers):
                    raise ExploreStuck(self._describe_stuck(workers))
                continue
            picked, entry = decide(options, choices, schedule, self.now)
            first: Worker | None = None
            if isinstance(picked, TimerSpec):
                timers.remove(picked)
                self.now = max(self.now, picked.at)
                clock.set(EPOCH + timedelta(seconds=self.now))
                target = by_client[picked.client]
                for op in picked.ops:
                    self._enqueue(target, partial(perform, target, executor, op))
                first = target if self.TIMER_MOVES_CLIENT else None
                entry["kind"] = "timer"
                counts["timers"] += 1
            else:
                if self._is_step(picked):
                    counts["steps"] += 1
                    if counts["steps"] > max_steps:
                        raise ExploreStuck(f"more than {max_steps} steps in one schedule")
                first = self._grant(picked, workers, clock, entry)
            expired = self._settled(workers)
            if expired:
                entry["settle"] = expired
                counts["expired"] += 1
            if first is not None and self._waited(first):
                entry["waited"] = True
                counts["waits"] += 1
            schedule.append(entry)
            self._flush(first, workers, executor)

    def _abort(self, workers: list[Worker]) -> None:
        """Unwind every worker's operation (their transactions roll back, held steps pass);
        wait until each is idle; forget the schedule."""
        with self.cv:
            self._release()
            for worker in workers:
                worker.abort = True
                worker.queue.clear()
                worker.cv.notify()
            self.cv.wait_for(lambda: all(w.status == IDLE for w in workers), timeout=STUCK_S)
            for worker in workers:
                self._reset(worker)
                worker.events[:] = []
                worker.error = None
            self._forget(workers)

    # -- the workers' lifetime ------------------------------------------------------------------
    def close(self) -> None:
        with self.cv:
            self._release()
            for worker in self.workers:
                worker.stopping = True
                worker.cv.notify()
        for worker in self.workers:
            worker.thread.join(timeout=STUCK_S)
        self._close_resources()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
