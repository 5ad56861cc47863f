"""Run drills: serve the profile's providers as recording fakes, submit tagged intents through
the service's own API (every intent of every drill in one round), watch each job until it
settled (:mod:`harness.drill.intent`), and hand each intent's evidence to the judge.

I/O only; the verdicts are :mod:`harness.drill.judge`'s. One clock: the fakes and the engine
measure seconds from the same ``epoch``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from harness.drill.again import REDRILLS, drill_again, replacing
from harness.drill.client import Clients, ServiceClient, clients_of
from harness.drill.drills import DRILLS, Drill, late_ms
from harness.drill.evidence import IDEMPOTENCY_HEADERS, Call, IntentEvidence
from harness.drill.findings import IntentVerdict
from harness.drill.intent import IntentRun, Probe, Slot
from harness.drill.judge import Certifier, Setup, judge_intent, mark_overload
from harness.drill.serving import Served, serving
from harness.target.drill_profile import DrillProfile


@dataclass
class DrillResults:
    """Every intent of one run, judged, by drill (in the order the drills were asked for)."""

    profile: str
    target: str
    trials: int
    concurrency: int
    fakes: list[tuple[str, str, str]]
    verdicts: dict[str, list[IntentVerdict]] = field(default_factory=dict)
    wall_s: float = 0.0
    calls: int = 0
    #: the probe (one control intent) never reached the fakes: nothing else was drilled
    unreached: IntentVerdict | None = None

    def add(self, verdict: IntentVerdict) -> None:
        """A trial's verdict (its last intent's)."""
        self.verdicts[verdict.evidence.drill].append(verdict)


@dataclass
class Engine:
    """One profile's drills against one running service."""

    profile: DrillProfile
    target: str
    env: Mapping[str, str]
    served: list[Served]
    epoch: float
    clients: Clients  # to the service: the submits, and the looks at a job
    concurrency: int | None = None  # intents at work at once (None: all of them, one round)
    stop: threading.Event = field(default_factory=threading.Event)
    _woken: dict[str, threading.Event] = field(default_factory=dict)  # each intent's watcher
    #: other waiters on a tag's calls (a second click, the probe): each with its own event, so
    #: that none takes a wake-up another was waiting for
    _waiting: dict[str, list[threading.Event]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _load: int = 8  # intents at work at once, for the pace of the looks at a job

    def __post_init__(self) -> None:
        for item in self.served:
            item.fake.on_change = self._changed
        #: the drill's requests to the service (submits, looks at a job, its lists)
        self.service = ServiceClient(self.profile, self.env, self.clients, self.now, self.stop,
                                     self.budget)

    def _changed(self, tag: str | None) -> None:
        """A call of ``tag`` arrived or ended: its watcher looks at the job now, and whoever
        waits on its calls checks them."""
        if tag is None:
            return
        with self._lock:
            events = [self._woken.get(tag), *self._waiting.get(tag, ())]
        for event in events:
            if event is not None:
                event.set()

    def wake(self, tag: str) -> None:
        """Wake whoever waits on ``tag``'s calls (its intent is closing)."""
        self._changed(tag)

    @contextmanager
    def waiting(self, tag: str, event: threading.Event) -> Iterator[threading.Event]:
        """``event`` is set at each arrival and end of a call of ``tag`` while inside."""
        with self._lock:
            self._waiting.setdefault(tag, []).append(event)
        try:
            yield event
        finally:
            with self._lock:
                self._waiting[tag].remove(event)
                if not self._waiting[tag]:
                    del self._waiting[tag]

    def pause(self, tag: str, seconds: float) -> bool:
        """Wait ``seconds`` between two looks at a job, or less if a call of its tag arrived or
        ended (True): the watcher looks when something happens, and slowly in between."""
        event = self._woken.setdefault(tag, threading.Event())
        woken = event.wait(seconds)
        event.clear()
        return woken and not self.stop.is_set()

    def forget_wake(self, tag: str) -> None:
        self._woken.pop(tag, None)

    @property
    def fakes(self) -> list[tuple[str, str, str]]:
        """(name, kind, url) of every fake, for the judge's fixes and the report."""
        return [(s.upstream.name, s.upstream.kind, s.url) for s in self.served]

    @property
    def section(self) -> Any:
        return self.profile.section

    def now(self) -> float:
        return time.monotonic() - self.epoch

    # -- the pace of one intent ---------------------------------------------------------------
    @property
    def poll_s(self) -> float:
        observe = self.section.observe
        return observe.poll_s if observe is not None else 0.05

    @property
    def idle_s(self) -> float:
        """The pause between looks when nothing happens: the intents at work together look
        about 200 times a second at most (their looks would load the service), each at least
        every second. Quick looks follow each call's arrival and end (:meth:`pause`), and held
        answers wait for them, so a slower idle pace misses nothing the drill scripts."""
        return max(self.poll_s, min(1.0, self._load / 200))

    @property
    def settle_s(self) -> float:
        """``timeouts.settle_s``; by default the longer of 5 s and 3 x provider_s for a jobs
        service (a queue's redelivery), the provider timeout (1-5 s) for a chat call."""
        t = self.section.timeouts
        if t.settle_s is not None:
            return float(t.settle_s)
        if self.section.submit.kind == "create_job":
            return max(5.0, 3 * t.provider_s)
        return min(5.0, max(1.0, t.provider_s))

    @property
    def budget(self) -> float:
        """How long an intent may take to complete."""
        t = self.section.timeouts
        return t.job_s + late_ms(t.provider_s) / 1000 + 1.0

    # -- the fakes, for one tag ---------------------------------------------------------------
    def script(self, tag: str, primary: str, *, hold_primary: bool, hold_fallback: bool) -> None:
        """The tag's scripts: the primary's behaviour, the fallbacks answer; held answers go
        when the intent lets them go, or at the fakes' backstop: for the fallback three quarters
        of the provider timeout after its call arrived (within the service's own timeout for
        the call, which would otherwise cut it), for the late primary the intent's budget. A
        fallback answer that went at its backstop is the judge's matter (the drill may not have
        looked twice while it was held). A watched job's call that arrives after an answer of
        its tag (a re-run, a redelivery) waits for a look at the job that began after it
        arrived, or one that saw the job complete for an answer that waited meanwhile
        (:meth:`looked`), at most the same three quarters of the provider timeout."""
        self._woken[tag] = threading.Event()
        cap = self.section.timeouts.backstop
        look = cap if self.section.submit.kind == "create_job" else None
        for item in self.served:
            if item.upstream.role == "primary":
                item.fake.script_tag(tag, primary, hold=hold_primary, hold_max_s=self.budget,
                                     look_max_s=look)
            else:
                item.fake.script_tag(tag, "conformant", hold=hold_fallback, hold_max_s=cap,
                                     look_max_s=look)

    def let_go(self, tag: str, role: str | None) -> None:
        """Deliver the held answers of ``tag`` at the providers of ``role`` (None: all, and
        no call of the tag waits for a look any more)."""
        for item in self.served:
            if role is None or item.upstream.role == role:
                item.fake.let_go(tag)
            if role is None:
                item.fake.after_answer.let_go(tag)

    def looked(self, tag: str, began: float, complete: bool) -> None:
        """A look at ``tag``'s job that began at ``began`` ended (``complete``: it saw the job
        complete): an answer that waits for its turn after an earlier one may go."""
        for after in {id(s.fake.after_answer): s.fake.after_answer for s in self.served}.values():
            after.looked(tag, began, complete)

    def complete_seen(self, tag: str) -> bool:
        """Whether a look saw ``tag``'s job complete since the tag's latest answer went."""
        return any(s.fake.after_answer.seen_complete(tag) for s in self.served)

    def waiting_for_look(self, tag: str) -> bool:
        """Whether an answer of ``tag`` waits for a look at the job (after an earlier one)."""
        return any(s.fake.after_answer.waiting(tag) for s in self.served)

    def release(self, tag: str) -> None:
        """Close the tag's hung calls (outcome ``released``) and deliver its held answers."""
        for item in self.served:
            item.fake.release(tag)
        self.wait_settled(tag, 5.0)

    def open_calls(self, tag: str) -> int:
        return sum(s.fake.open_calls(tag) for s in self.served)

    def wait_settled(self, tag: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        return all(s.fake.wait_settled_tag(tag, max(0.0, deadline - time.monotonic()))
                   for s in self.served)

    def wait_for(self, tag: str, seen: Callable[[list[Call]], bool], timeout_s: float) -> bool:
        """Block until ``seen(the tag's calls)`` (True), woken by each arrival and end (its own
        wake-ups: the intent's watcher keeps its own)."""
        deadline = time.monotonic() + timeout_s
        with self.waiting(tag, threading.Event()) as event:
            while not seen(self.calls(tag)):
                left = deadline - time.monotonic()
                if left <= 0 or self.stop.is_set():
                    return False
                event.wait(left)
                event.clear()
        return True

    def calls(self, tag: str) -> list[Call]:
        out = []
        for item in self.served:
            for r in item.fake.received_tag(tag):
                out.append(Call(item.upstream.name, item.upstream.role, r.seq, r.at,
                                r.ended_at, r.outcome, r.behaviour, r.status, r.stream,
                                any(h in r.headers for h in IDEMPOTENCY_HEADERS), r.held,
                                r.freed, r.freed_at, r.waited, r.prompt))
        return sorted(out, key=lambda c: c.at)

    def untagged(self, since: float) -> int:
        """Provider calls carrying no drill tag that arrived at or after ``since``."""
        return sum(1 for item in self.served for r in item.fake.received_tag(None)
                   if r.at >= since)

    # -- the run ------------------------------------------------------------------------------
    def run(self, drills: Sequence[str], trials: int, *, certify: Certifier | None = None,
            on_intent: Callable[[IntentVerdict], None] | None = None,
            probe: bool = False, owns: Callable[[str, int], bool] | None = None,
            redrills: int = REDRILLS,
            on_again: Callable[[IntentVerdict], None] | None = None) -> DrillResults:
        """Every (drill, trial) intent in one round: all at once (``concurrency`` of them at
        work at a time; a settling intent gives its place back), each judged as it ends; then
        the trials the load left without evidence drilled again, at most ``redrills`` times
        (:mod:`harness.drill.again`; ``on_again`` hears of each such intent as it is judged).
        ``probe``: one control intent first; if the service
        never calls the fakes for it, stop there (:attr:`DrillResults.unreached`). ``owns``: a
        shard's intents only."""
        setup = Setup(self.section, self.fakes, certify, self.target)
        run = DrillResults(self.profile.name, self.target, trials, self.concurrency or 0,
                           self.fakes, {name: [] for name in drills})
        jobs = [(DRILLS[name], trial) for trial in range(1, trials + 1) for name in drills
                if owns is None or owns(name, trial)]
        before = sum(len(s.fake.received()) for s in self.served)
        started = time.perf_counter()
        probing = self._probe(setup) if probe else None
        if probing is not None and probing.unreached():
            run.unreached = probing.verdict
            run.wall_s = time.perf_counter() - started
            return run
        kept = probing is not None and (DRILLS["control"], 1) in jobs
        if kept:
            jobs.remove((DRILLS["control"], 1))  # the probe is control's first trial
        try:
            self._rounds(jobs, setup, run, on_intent, redrills, on_again)
        finally:
            first = probing.end() if probing is not None else None
        if first is not None and kept:  # (a shard that does not own it only probed)
            run.add(first)
            if on_intent is not None:
                on_intent(first)
        run.wall_s = time.perf_counter() - started
        run.calls = sum(len(s.fake.received()) for s in self.served) - before
        mark_overload([v for verdicts in run.verdicts.values() for v in verdicts], self._load)
        for verdicts in run.verdicts.values():
            verdicts.sort(key=lambda v: v.evidence.trial)
        return run

    def _probe(self, setup: Setup) -> Probe:
        """A control intent, started alone; the round starts as soon as a call of it reached a
        fake (it settles with the round), or it ended having reached none."""
        intent = IntentRun(self, DRILLS["control"], 1, Slot(threading.Semaphore(1)))
        probe = Probe(threading.Event())

        def go() -> None:
            try:
                probe.verdict = judge_intent(intent.run(), DRILLS["control"], setup)
            except BaseException as exc:  # handed to the caller by end()
                probe.error = exc
            finally:
                probe.reached.set()

        with self.waiting(intent.tag, probe.reached):
            probe.thread = threading.Thread(target=go, name="drill-probe", daemon=True)
            probe.thread.start()
            probe.reached.wait()  # the intent's own budget bounds it
        return probe

    def _rounds(self, jobs: list[tuple[Drill, int]], setup: Setup, run: DrillResults,
                on_intent: Callable[[IntentVerdict], None] | None, redrills: int,
                on_again: Callable[[IntentVerdict], None] | None = None) -> None:
        """The round, then a round of fresh intents for the trials the load left without
        evidence, at most ``redrills`` times; each trial judged by its last intent."""
        def keep(v: IntentVerdict) -> None:
            run.add(v)
            if on_intent is not None:
                on_intent(v)

        def redo(v: IntentVerdict) -> bool:
            again = drill_again(v, redrills)
            if again and on_again is not None:
                on_again(v)
            return again

        again = self._round([(drill, trial, None) for drill, trial in jobs], setup, keep, redo)
        load = self._load  # the round's, for the judge of overload (mark_overload)
        while again and not self.stop.is_set():
            again = self._round([(DRILLS[v.evidence.drill], v.evidence.trial, v)
                                 for v in again], setup, keep, redo)
        for v in again:  # interrupted: they stand as judged
            keep(v)
        self._load = load

    def _round(self, jobs: list[tuple[Drill, int, IntentVerdict | None]], setup: Setup,
               keep: Callable[[IntentVerdict], None],
               redo: Callable[[IntentVerdict], bool]) -> list[IntentVerdict]:
        """Drill ``jobs`` (each a trial, and the intent it replaces, if any) at once; ``keep``
        each verdict, but those to ``redo``: returned, in trial order."""
        at_work = min(self.concurrency or len(jobs), len(jobs)) or 1
        self._load = at_work
        places = threading.Semaphore(at_work)
        lock = threading.Lock()
        again: list[IntentVerdict] = []

        def one(job: tuple[Drill, int, IntentVerdict | None]) -> None:
            drill, trial, earlier = job
            slot = Slot(places)
            slot.take()
            if self.stop.is_set():  # the run was interrupted while this intent waited
                slot.give_back()
                if earlier is not None:
                    with lock:
                        keep(earlier)
                return
            try:
                verdict = judge_intent(IntentRun(self, drill, trial, slot).run(), drill, setup)
            finally:
                slot.give_back()
            if earlier is not None:
                verdict = replacing(verdict, earlier)
            with lock:
                (again.append if redo(verdict) else keep)(verdict)

        with ThreadPoolExecutor(max_workers=max(1, len(jobs)),
                                thread_name_prefix="drill") as pool:
            try:
                for future in [pool.submit(one, j) for j in jobs]:
                    future.result()
            except BaseException:
                self.stop.set()  # the other intents stop watching at their next look
                raise
        return sorted(again, key=lambda v: (v.evidence.drill, v.evidence.trial))

    # -- the service --------------------------------------------------------------------------
    def lists(self, ev: IntentEvidence, job: str) -> None:
        """The lists the service shows for the job (attempts, races), read once it settled."""
        observe = self.section.observe
        if observe.attempts is not None:
            ev.attempts = self.service.listed(observe.attempts, job)
        if observe.races is not None:
            ev.races = self.service.listed(observe.races, job)
            # Two answers reached the service: the loser's race may still be being written (a
            # loaded service; seen: 1.4 s, and beyond 3 s where its database waited on a lock):
            # look again until the intent's budget passed before judging it missing; a list
            # the service did not answer is read again too
            answered = sum(c.outcome == "answered" for c in self.calls(ev.tag))
            deadline = self.now() + max(2.0, 2 * self.section.timeouts.provider_s + 0.3,
                                        self.budget)
            pace = max(observe.poll_s, 0.1)
            while answered > 1 and not ev.races and self.now() < deadline \
                    and not self.stop.wait(pace):
                ev.races = self.service.listed(observe.races, job)


@contextmanager
def drilling(profile: DrillProfile, *, target: str, env: Mapping[str, str],
             ports: Mapping[str, int] | None = None,
             concurrency: int | None = None) -> Iterator[Engine]:
    """The fakes listening and a client for the service: ConfigError for a profile, variable or
    port problem before anything is drilled (so a caller opens its report after this)."""
    upstreams = profile.upstreams(env, ports)
    profile.headers(env)  # an unset ${VAR} fails here, before anything runs
    profile.headers(env, "observe")
    epoch = time.monotonic()
    t = profile.section.timeouts
    with serving(profile, upstreams, epoch) as served, \
            clients_of(target, t.job_s + late_ms(t.provider_s) / 1000 + 5,
                       concurrency) as clients:
        yield Engine(profile, target, env, served, epoch, clients, concurrency=concurrency)


def run_drills(profile: DrillProfile, *, target: str, env: Mapping[str, str],
               drills: Sequence[str], trials: int = 1, concurrency: int | None = None,
               ports: Mapping[str, int] | None = None, certify: Certifier | None = None,
               on_intent: Callable[[IntentVerdict], None] | None = None) -> DrillResults:
    """Drill ``target`` (a running service) with every named drill, ``trials`` intents each,
    ``concurrency`` at a time; ConfigError for a profile or port problem (nothing started)."""
    with drilling(profile, target=target, env=env, ports=ports,
                  concurrency=concurrency) as engine:
        return engine.run(drills, trials, certify=certify, on_intent=on_intent)
