"""Explore a service through its storage: schedule its requests' Redis / PostgreSQL steps.

The service is a black box on the far side of HTTP; its storage traffic goes through the holding
:class:`~harness.explore.proxy.Proxy`, which holds every step until this controller grants it.
There is no hypervisor, so the controller learns what the service is doing from two signals:
which HTTP requests are outstanding, and which steps are held at the proxy.

1. *settle*: wait until every outstanding request is held at the proxy, answered, parked (an
   "in progress" answer waiting for its retry) or waiting on a lock inside PostgreSQL (asked with
   ``pg_blocking_pids`` for the backend pid the proxy read from ``BackendKeyData``) — or until
   ``settle_ms`` passes: an expired settle is recorded in the schedule, so a replay can say
   "nondeterministic here" rather than lie;
2. list what may happen next — a held step, a plan timer, and (when nothing else can run) a
   parked retry — and ask the choice source; grant it, fire it, or release it.

Whose step is it? Only one request moves at a time (the one just granted or sent), so a step
that arrives while exactly one request is moving is that request's, whichever pooled connection
it came on. Steps are named ``<client>: <shape>`` — the command and its keys, or the statement
with its literals elided, with this schedule's fresh key replaced by ``*`` — so labels are the
same from run to run and replay and shrinking survive connection pooling. A step that arrives
while no request moves (a timer or thread of the service's own) passes as *background*; one that
arrives while several move (after an expired settle) is attributed to the one moving longest
and marked as a guess.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from functools import partial
from typing import Any

from harness.domain.clock import EPOCH, ManualClock
from harness.domain.errors import ConfigError
from harness.explore.hold import IDLE, PARKED, Worker
from harness.explore.http_session import ControlledSession
from harness.explore.loop import (
    POLL_S,
    STUCK_S,
    ScheduleLoop,
    flush_events,
    perform,
    raise_worker_error,
)
from harness.explore.ops import Executor
from harness.explore.plan import Plan, TimerSpec
from harness.explore.proxy import HeldStep, Link, Proxy
from harness.scenarios.history import History
from harness.scenarios.targets.base import Target
from harness.store.postgres import _safe

DEFAULT_SETTLE_MS = 100.0
REPLAY_SETTLE_S = 3.0  # a replay of a fully settled recording waits this long for each settle
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b|\b\d{6,}\b"
                  r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def elide(shape: str, tag: str) -> str:
    """A shape with this schedule's key tag and generated ids (long hex or digit runs, UUIDs)
    replaced by ``*``, so it reads the same in every run."""
    return _HEX.sub("*", shape.replace(tag, "*"))


class ThroughController(ScheduleLoop):
    """Runs plans against an HTTP service whose storage steps wait at ``proxy`` (the service
    driver of :class:`~harness.explore.loop.ScheduleLoop`)."""

    MAX_STEPS = 2_000
    TIMER_MOVES_CLIENT = True

    def __init__(self, target: Target, proxy: Proxy, *, settle_ms: float = DEFAULT_SETTLE_MS,
                 control_url: str | None = None) -> None:
        super().__init__(secrets.token_hex(4))
        self.target = target
        self.proxy = proxy
        self.settle_s = settle_ms / 1000
        self.held: dict[Worker, list[HeldStep]] = {}
        self.inflight: dict[Worker, list[HeldStep]] = {}
        self.moved: dict[Worker, int] = {}  # when each began to move (for guesses)
        self.waiting: dict[Worker, set[int]] = {}  # blocked in PostgreSQL on these pids
        self.due: dict[Worker, float] = {}  # parked retries: virtual time they are due
        self.links: dict[Worker, Link] = {}  # the connection of each worker's last step
        self.holding = False
        self.opened = False
        self.tag = ""
        self.ticks = 0
        self.counts = {"background": 0, "guessed": 0}
        self.baseline = 0  # the side-effect counter when the schedule began
        self.stack = ExitStack()
        self.session = ControlledSession(
            self.stack.enter_context(target.session(ManualClock(EPOCH), self.run_id, 16)), self)
        self.before: tuple[int, dict[str, int]] = (0, {})
        self.control: Any = None
        if proxy.upstream.kind == "postgres":
            self.control = _control_connection(control_url or proxy.upstream.url)
        proxy.hold = self

    @contextmanager
    def following(self, recorded: list[dict[str, Any]] | None) -> Iterator[None]:
        """Replaying ``recorded``: if every settle of the recording completed (no ``settle``
        mark), a settle now waits up to :data:`REPLAY_SETTLE_S` — a loaded machine makes the
        service slower to reach the proxy, and expiring there would make the replay diverge
        where the recording was controlled. A recording with an expired settle keeps its
        settle time (it was not controlled there; the replay says so if it diverges)."""
        settled = recorded is not None and not any(e.get("settle") for e in recorded)
        kept = self.settle_s
        if settled:
            self.settle_s = max(kept, REPLAY_SETTLE_S)
        try:
            yield
        finally:
            self.settle_s = kept

    # -- the proxy's side (Hold) ----------------------------------------------------------------
    def submit(self, step: HeldStep) -> None:
        """Hold ``step`` for the controller (granted in :meth:`_race`), or let it pass: between
        schedules, and a *background* step (no request moves)."""
        with self.cv:
            if not self.holding or self.opened:
                step.granted = True
                return
            moving = self._moving()
            if not moving:
                self.counts["background"] += 1
                step.granted = True
                return
            worker, step.guessed = self._owner(step, moving)
            self.counts["guessed"] += step.guessed
            step.client = worker.client
            label = f"{worker.client}: {elide(step.shape, self.tag)}"
            same = sum(1 for s in self.held[worker] if s.label.split(" #")[0] == label)
            step.label = f"{label} #{same + 1}" if same else label
            self.held[worker].append(step)
            self.cv.notify_all()

    def _owner(self, step: HeldStep, moving: list[Worker]) -> tuple[Worker, bool]:
        """Whose step it is when several requests move (after an expired settle, or when a
        commit released a statement that waited): the one whose last step used this very
        connection; never one whose connection is inside a transaction (its next statement comes
        on that connection); else the one that began to move first — a guess."""
        if len(moving) > 1:
            same = [w for w in moving if self.links.get(w) is step.link]
            free = [w for w in moving if not ((link := self.links.get(w)) is not None
                                              and link.in_tx and link is not step.link)]
            moving = same if len(same) == 1 else free or moving
        return min(moving, key=lambda w: self.moved.get(w, 0)), len(moving) > 1

    def answered(self, step: HeldStep) -> None:
        with self.cv:
            for worker, steps in self.inflight.items():
                if step in steps:
                    steps.remove(step)
                    if self.waiting.pop(worker, None) is not None:
                        self.ticks += 1
                        self.moved[worker] = self.ticks  # released: it moves from now on
            self.cv.notify_all()

    def gone(self, link: Link) -> None:
        with self.cv:
            for steps in (*self.held.values(), *self.inflight.values()):
                steps[:] = [s for s in steps if s.link is not link]
            self.cv.notify_all()

    # -- the session's side: parked retries -----------------------------------------------------
    def park(self, worker: Worker, label: str, wait_s: float) -> None:
        """Park ``worker`` (its request was answered "in progress") until its retry is chosen."""
        with self.cv:
            self.due[worker] = self.now + wait_s
        worker.wait_turn(label)

    # -- workers ----------------------------------------------------------------------------------
    def _workers(self, n: int) -> list[Worker]:
        while len(self.workers) < n:
            worker = Worker(len(self.workers), self.lock, self.cv)
            worker.thread.start()
            self.workers.append(worker)
        return self.workers[:n]

    def _enqueue(self, worker: Worker, job: Any) -> None:
        with self.cv:
            worker.queue.append(job)
            self.ticks += 1
            self.moved[worker] = self.ticks
            worker.cv.notify()

    def _moving(self) -> list[Worker]:
        """Workers whose request is on its way: not held, answered, parked or blocked."""
        return [w for w in self.held if w.unsettled() and not self.held[w]
                and w not in self.waiting]

    # -- one schedule (the loop's hooks) ------------------------------------------------------
    def _executor(self, plan: Plan, tag: str, clock: ManualClock, history: History) -> Executor:
        self.tag = tag
        self.before = (self.proxy.commands, dict(self.counts))
        return Executor(plan, self.session, self.tag, history, fresh_owners=False,
                        promises=self.target.promises(),
                        lease_ms=self.target.promises().get("lease_ms"),
                        unseen=self.target.unmapped("create"))

    def _begin(self, by_client: dict[str, Worker]) -> None:
        with self.cv:
            self.held = {w: [] for w in by_client.values()}
            self.inflight = {w: [] for w in by_client.values()}
            self.waiting, self.due, self.moved, self.links = {}, {}, {}, {}
            for client, worker in by_client.items():
                worker.client, worker.events = client, []
            self.holding, self.opened = True, False

    def _send(self, plan: Plan, by_client: dict[str, Worker], executor: Executor,
              schedule: list[dict[str, Any]], counts: dict[str, int]) -> None:
        self.last_schedule = schedule
        workers = list(by_client.values())
        for client in sorted(plan.clients):  # one request at a time: whose step is whose
            worker = by_client[client]
            for op in plan.clients[client]:
                self._enqueue(worker, partial(perform, worker, executor, op))
            expired = self._settle()
            if expired:
                schedule.append({"n": len(schedule), "time": 0.0, "event": f"{client}: sent",
                                 "kind": "send", "settle": expired})
                counts["expired"] += 1
            self._flush(worker, workers, executor)

    def _end(self) -> None:
        with self.cv:
            self.holding = False

    def _meta(self, counts: dict[str, int]) -> dict[str, Any]:
        return {"commands": self.proxy.commands - self.before[0],
                "background": self.counts["background"] - self.before[1]["background"],
                "guessed": self.counts["guessed"] - self.before[1]["guessed"],
                "settles_expired": counts["expired"]}

    def _done(self, workers: list[Worker]) -> bool:
        with self.cv:
            return all(w.status == IDLE and not w.queue for w in workers) and not any(
                self.held.values())

    def _is_step(self, picked: Any) -> bool:
        return isinstance(picked, HeldStep)

    def _grant(self, picked: Any, workers: list[Worker], clock: ManualClock,
               entry: dict[str, Any]) -> Worker:
        if isinstance(picked, Worker):  # a parked retry
            with self.cv:
                self.now = max(self.now, self.due.pop(picked, self.now))
                clock.set(EPOCH + timedelta(seconds=self.now))
                self.ticks += 1
                self.moved[picked] = self.ticks
                picked.granted = True
                picked.cv.notify()
            entry["kind"] = "retry"
            return picked
        first = next(w for w in workers if w.client == picked.client)
        entry["kind"], entry["op"] = "step", first.doing
        if picked.guessed:
            entry["guessed"] = True
        with self.cv:
            self.held[first].remove(picked)
            self.inflight[first].append(picked)
            self.links[first] = picked.link
            self.ticks += 1
            self.moved[first] = self.ticks
            picked.granted = True
        picked.link.wake()
        return first

    def _settled(self, workers: list[Worker]) -> list[str]:
        return self._settle()

    def _waited(self, worker: Worker) -> bool:
        return worker in self.waiting

    def _options(self, workers: list[Worker], timers: list[TimerSpec]) -> list[
            tuple[str, HeldStep | TimerSpec | Worker]]:
        """Held steps (only lock holders while a step waits in PostgreSQL), the soonest plan
        timers, and — when nothing else may run — the soonest parked retries."""
        with self.cv:
            steps = [s for w in sorted(workers, key=lambda w: w.client) for s in self.held[w]]
            if self.waiting:
                blockers = set().union(*self.waiting.values())
                holding = [s for s in steps if s.link.pid in blockers]
                steps = holding or [s for s in steps if not any(
                    s.client == w.client for w in self.waiting)]
            options: list[tuple[str, HeldStep | TimerSpec | Worker]] = [(s.label, s) for s in steps]
            if timers:
                soonest = timers[0].at
                options += [(t.label, t) for t in timers if t.at == soonest]
            parked = [w for w in workers if w.status == PARKED and not w.granted and w in self.due]
            if not options and parked:
                soonest = min(self.due[w] for w in parked)
                options += [(w.label or "", w) for w in sorted(parked, key=lambda w: w.client)
                            if self.due[w] == soonest]
        return options

    def _settle(self) -> list[str]:
        """Wait until no request moves (see the module docstring); the clients still moving when
        the settle time ran out (empty: it settled)."""
        deadline = time.monotonic() + self.settle_s
        while True:
            with self.cv:
                probing = self.control is not None and any(self.inflight[w]
                                                           for w in self._moving())
                remaining = deadline - time.monotonic()
                self.cv.wait_for(lambda: not self._moving(),
                                 timeout=max(0.0, min(remaining, POLL_S) if probing
                                             else remaining))
                self._check_errors()
                moving = self._moving()
                candidates = {w: self.inflight[w] for w in (*moving, *self.waiting)
                              if self.inflight[w]}
            if self.control is not None and candidates and self._probe(candidates):
                continue  # a statement stopped waiting: its answer is on its way
            if not moving:
                return []
            if time.monotonic() >= deadline:
                with self.cv:
                    return sorted(w.client for w in self._moving())

    def _patient(self, workers: list[Worker], timers: list[TimerSpec]) -> bool:
        """Nothing may run, yet not every request is done (e.g. PostgreSQL resolving a deadlock
        after its ``deadlock_timeout``, or a request whose settle expired still on its way):
        wait for a change — something may run, or every request is done; False if none came
        in time."""
        deadline = time.monotonic() + STUCK_S
        while time.monotonic() < deadline:
            if self._settle() or self._options(workers, timers) or self._done(workers):
                return True
            with self.cv:
                self.cv.wait(timeout=0.005)
        return False

    def _probe(self, candidates: dict[Worker, list[HeldStep]]) -> bool:
        """Ask PostgreSQL who each candidate's statement waits for; True when a statement that
        was waiting no longer does."""
        pids = sorted({s.link.pid for steps in candidates.values() for s in steps
                       if s.link.pid is not None})
        rows = self.control.execute(
            "SELECT pid, pg_blocking_pids(pid) FROM unnest(%s::int[]) AS pid", (pids,)
        ).fetchall()
        blocked = {int(pid): {int(p) for p in blockers or ()} for pid, blockers in rows}
        released = False
        with self.cv:
            for worker in candidates:
                found = set().union(*(blocked.get(s.link.pid or -1, set())
                                      for s in self.inflight.get(worker, ())))
                if found:
                    self.waiting[worker] = found
                elif self.waiting.pop(worker, None) is not None:
                    released = True
                    self.ticks += 1
                    self.moved[worker] = self.ticks
            self.cv.notify_all()
        return released

    def _check_errors(self) -> None:
        raise_worker_error(self.held)

    def _flush(self, first: Worker | None, workers: list[Worker], executor: Executor) -> None:
        flush_events(first, workers, executor, self.cv)
        self._check_errors()

    def _observe(self, history: History, moment: str) -> None:
        """Read the service's side-effect counter (when its profile names one), relative to the
        schedule's start: the counter runs on over thousands of schedules, and a replay must
        write the same bytes."""
        if "side_effects" not in self.target.capabilities:
            return
        count = int(self.session.count_side_effects())
        if moment == "start":
            self.baseline = count
        history.observe_side_effects(moment, count - self.baseline)

    def _release(self) -> None:
        self._open()

    def _reset(self, worker: Worker) -> None:
        worker.abort = worker.granted = False

    def _forget(self, workers: list[Worker]) -> None:
        self.held = {w: [] for w in workers}
        self.inflight = {w: [] for w in workers}
        self.waiting, self.due = {}, {}

    def _open(self) -> None:
        """Let every held step through, and every later one (call with the lock held)."""
        self.opened = True
        for steps in self.held.values():
            for step in steps:
                step.granted = True
                step.link.wake()

    def _describe_stuck(self, workers: list[Worker]) -> str:
        with self.cv:
            states = []
            for w in workers:
                state = f"{w.client}={'held' if self.held[w] else w.status}"
                if self.held[w]:
                    state += f" at {self.held[w][0].label}"
                if w in self.waiting:
                    state += f" (waits in PostgreSQL on backend {sorted(self.waiting[w])})"
                states.append(state)
            connections = len(self.proxy.links)
        return (f"the schedule is stuck at virtual time {self.now:g} s: {', '.join(states)} — "
                f"no request can move (connections through the proxy: {connections}); no "
                "promise was seen broken. If the service or its storage was merely slow (a "
                "loaded machine), run again with a larger --settle-ms")

    def _close_resources(self) -> None:
        self.stack.close()
        if self.control is not None:
            self.control.close()

    def __enter__(self) -> ThroughController:
        return self


def _control_connection(url: str) -> Any:
    """A direct connection to PostgreSQL (not through the proxy) for ``pg_blocking_pids``."""
    try:
        import psycopg  # optional extra: postgres
    except ImportError:  # pragma: no cover - without the postgres extra
        raise ConfigError("exploring through PostgreSQL needs psycopg", field="--through",
                          fix="pip install 'failover-harness[postgres]'") from None
    try:
        return psycopg.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise ConfigError(f"cannot reach PostgreSQL at the --through URL: {_safe(exc, url)}",
                          field="--through", fix="start it, or fix the URL (user, database, "
                          "password)") from None


__all__ = ["DEFAULT_SETTLE_MS", "ThroughController", "elide"]
