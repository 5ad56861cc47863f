"""``--stress``: free-running threads, for targets the controller cannot see inside.

Each round draws a plan as the seeded search does, then lets the operating system and the target
decide everything: every racing client runs on its own thread, all released by one barrier; a
timer thread delivers the timers in virtual-time order as fast as it can. Each operation is
written to the history the moment it is invoked and the moment it completes (real-time order),
and the same checkers judge it. Nothing is replayable: a violation's folder has the history and
the explanation, no schedule.

Works on every target the scenario engine opens (stores, mutants — with their timed rendezvous —
and HTTP services).
"""

from __future__ import annotations

import queue
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from harness.domain.clock import EPOCH, ManualClock, rfc3339
from harness.explore.controller import ScheduleRun
from harness.explore.ops import Completed, Executor, Invoked
from harness.explore.plan import OpSpec, Plan, RandomDraw
from harness.explore.search import Found, Progress, SearchSettings, _more
from harness.explore.workloads import build_plan
from harness.scenarios.checkers import run_checkers, verdict_of
from harness.scenarios.history import History
from harness.scenarios.targets.base import Target, TargetSession

BARRIER_TIMEOUT_S = 60.0
_DONE = object()


class _Recorder:
    """An events list that writes each event to the history at once, under a lock."""

    def __init__(self, executor: Executor, lock: threading.Lock) -> None:
        self.executor = executor
        self.lock = lock

    def append(self, event: Invoked | Completed) -> None:
        with self.lock:
            self.executor.record(event)


@dataclass
class _Clock:
    now: float = 0.0


def run_free(plan: Plan, session: TargetSession, clock: ManualClock, tag: str,
             *, fresh_owners: bool) -> ScheduleRun:
    """Run ``plan`` once with free-running threads and judge the history."""
    started = time.perf_counter()
    virtual = _Clock()
    history = History(now=lambda: (virtual.now, rfc3339(clock.now())))
    executor = Executor(plan, session, tag, history, fresh_owners=fresh_owners)
    for op in plan.setup:
        executor.inline(op)
    lock = threading.Lock()
    recorder = _Recorder(executor, lock)
    clients = plan.racing_clients()
    queues: dict[str, queue.Queue[Any]] = {c: queue.Queue() for c in clients}
    for client, ops in plan.clients.items():
        for op in ops:
            queues[client].put(op)
    barrier = threading.Barrier(len(clients) + 1)
    errors: list[BaseException] = []

    def client_main(name: str) -> None:
        try:
            barrier.wait(timeout=BARRIER_TIMEOUT_S)
            while (item := queues[name].get()) is not _DONE:
                assert isinstance(item, OpSpec)
                executor.perform(item, recorder)  # type: ignore[arg-type]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client_main, args=(c,), name=f"stress-{c}")
               for c in clients]
    for thread in threads:
        thread.start()
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    for timer in sorted(plan.timers, key=lambda t: (t.at, t.label)):
        with lock:
            virtual.now = max(virtual.now, timer.at)
            clock.set(EPOCH + timedelta(seconds=virtual.now))
        for op in timer.ops:
            queues[timer.client].put(op)
    for client in clients:
        queues[client].put(_DONE)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    for op in plan.epilogue:
        executor.inline(op)
    checks = run_checkers(plan.checkers, history.ops)
    return ScheduleRun(plan, history.ops, [], checks, verdict_of(checks), 0, len(plan.timers), 0,
                   virtual.now, time.perf_counter() - started)


def stress(target: Target, settings: SearchSettings,
           report: Callable[[Progress], None] | None = None) -> Found:
    """Rounds of free-running plans on ``target`` until a violation, the budget or the time."""
    progress = Progress(unit="rounds")
    tick = report or (lambda p: None)
    run_id = secrets.token_hex(4)
    fresh_owners = target.kind != "http"  # a service maps its own configured owners to tokens
    number = settings.first
    while _more(settings, progress):
        rng = random.Random(f"{settings.seed}:{number}")
        plan = build_plan(settings.workload, RandomDraw(rng), settings.clients)
        clock = ManualClock(EPOCH)
        tag = f"{run_id}.{number}"
        with target.session(clock, tag, len(plan.racing_clients()) + 1) as session:
            outcome = run_free(plan, session, clock, tag, fresh_owners=fresh_owners)
        progress.count(outcome)
        if outcome.violated:
            tick(progress)
            return Found(outcome, progress, number)
        tick(progress)
        number += 1
    return Found(None, progress)
