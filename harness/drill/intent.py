"""One drilled intent, from its submits to its close: script the fakes for its tag, submit it
(once, a double click from one barrier, staggered, or again after the service's timeout), watch
the job, let held answers go when the drill decides (docs/drill.md, "Held answers"), settle (a
quiet period with no call of its tag), and read the job a last time.

I/O only; the verdicts are :mod:`harness.drill.judge`'s. The engine (:mod:`harness.drill.engine`)
serves the fakes, owns the client and the clock, and runs many intents at once (the first, a
control intent alone: the :class:`Probe`).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.domain.words import counted
from harness.drill.drills import HELD_LOOKS, Drill, late_ms
from harness.drill.evidence import IntentEvidence, Observation
from harness.drill.findings import IntentVerdict
from harness.target.ids import UnusableId, path_segment

if TYPE_CHECKING:  # the engine runs intents; an intent only calls back into it
    from harness.drill.engine import Engine

#: quick looks at a job after a call of its tag arrived or ended, before slowing down again
QUICK_LOOKS = 3


@dataclass
class Slot:
    """An intent's place among the ``concurrency`` intents at work; given back when it only
    settles (a settling intent loads nothing but a slow poll)."""

    semaphore: threading.Semaphore
    held: bool = False

    def take(self) -> None:
        self.semaphore.acquire()
        self.held = True

    def give_back(self) -> None:
        if self.held:
            self.held = False
            self.semaphore.release()


@dataclass
class Probe:
    """The control intent that goes first: did the service call the fakes at all?"""

    reached: threading.Event
    thread: threading.Thread | None = None
    verdict: IntentVerdict | None = None
    error: BaseException | None = None

    def unreached(self) -> bool:
        """It ended without a single call at the fakes (nothing else is worth drilling)."""
        if self.error is not None:
            raise self.error
        return self.verdict is not None and not self.verdict.evidence.calls

    def end(self) -> IntentVerdict | None:
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            raise self.error
        return self.verdict


@dataclass
class Holds:
    """When the held answers of one intent go: the fallback's once the job was observed twice
    after the fallback's call arrived (:meth:`IntentRun._held_looks`; else the fakes' backstop
    lets it go, and the judge says what that means), the late primary's once the fallback's
    answer was delivered and a look saw the job complete after that (or ``late_s`` after it
    arrived when no fallback call came)."""

    fallback: bool
    primary: bool
    late_s: float
    closed: threading.Event = field(default_factory=threading.Event)  # the intent stops

    def tick(self, engine: Engine, ev: IntentEvidence, now: float, complete: bool) -> None:
        """The late primary's answer goes, once its moment came (the watcher asks)."""
        if not self.primary:
            return
        calls = engine.calls(ev.tag)
        fallbacks = [c for c in calls if c.role == "fallback"]
        primary = next((c for c in calls if c.role == "primary"), None)
        delivered = any(c.outcome == "answered" for c in fallbacks)
        alone = primary is not None and not fallbacks and now - primary.at >= self.late_s
        if (delivered and complete and engine.complete_seen(ev.tag)) or alone:
            engine.let_go(ev.tag, "primary")
            self.primary = False


@dataclass
class IntentRun:
    """One intent of ``drill``: its tag, its key, its evidence."""

    engine: Engine
    drill: Drill
    trial: int
    slot: Slot
    tag: str = field(default_factory=lambda: f"drill-{uuid.uuid4().hex[:12]}")
    key: str = field(default_factory=lambda: f"drill-key-{uuid.uuid4().hex}")

    def run(self) -> IntentEvidence:
        e, section = self.engine, self.engine.section
        jobs = section.submit.kind == "create_job"
        t = section.timeouts
        primary = self.drill.primary
        if self.drill.hold_primary and not jobs:  # a chat call is not observed: plain timing
            primary = f"slow:{late_ms(t.provider_s)}"
        # a held late primary with no fallback call after twice the service's timeout (and a
        # second): the service does not fail over; it then answers
        holds = Holds(fallback=jobs and self.drill.timeout,
                      primary=jobs and self.drill.hold_primary,
                      late_s=2 * t.provider_s + 1.0)
        e.script(self.tag, primary, hold_primary=holds.primary, hold_fallback=holds.fallback)
        ev = IntentEvidence(self.drill.name, self.trial, self.tag, e.now())
        helpers: list[threading.Thread] = []
        try:
            helpers = self._submit(ev)
            job = self._job(ev) if jobs else None
            if job is not None:
                helpers += self._held_looks(ev, holds, job)
                self._watch(ev, holds, job)
            else:
                self._settle_calls(ev)
        finally:
            holds.closed.set()
            e.wake(self.tag)
            for thread in helpers:
                thread.join(e.budget + 5)
            e.let_go(self.tag, None)
            e.forget_wake(self.tag)
        ev.submissions.sort(key=lambda s: s.at)
        ev.observations.sort(key=lambda o: o.at)  # the held looks came from a thread of theirs
        ev.calls = e.calls(self.tag)
        ev.untagged = e.untagged(since=ev.started_at)
        ev.ended_at = e.now()
        return ev

    # -- submits ------------------------------------------------------------------------------
    def _submit(self, ev: IntentEvidence) -> list[threading.Thread]:
        """The first submit now; a second one (a double click, a re-click) from a thread of
        its own, so that the job is watched (and held answers go) while it is in flight."""
        e = self.engine
        stream = e.section.submit.stream or self.drill.name == "stream-cut"
        lock = threading.Lock()

        def one() -> None:
            done = e.service.submit(self.tag, self.key, stream)
            with lock:
                ev.submissions.append(done)

        clicks = self.drill.clicks
        if clicks == "together":  # two clicks released from one barrier; watch after the 1st
            first = threading.Event()
            barrier = threading.Barrier(2, timeout=e.budget)

            def click() -> None:
                try:
                    barrier.wait()
                except threading.BrokenBarrierError:
                    return
                try:
                    one()
                finally:
                    first.set()
            both = _started([click, click])
            first.wait(e.budget + 5)
            return both
        one()
        if clicks == "once" or ev.submissions[0].status is None:
            return []
        return _started([lambda: self._click_again(clicks, one)])

    def _click_again(self, clicks: str, one: Callable[[], None]) -> None:
        """The second submit: once the primary's call arrived (staggered), or after the
        service's timeout, once it turned to the fallback (a re-click)."""
        e = self.engine
        wait = e.section.timeouts.provider_s + 2
        if not e.wait_for(self.tag, lambda calls: any(c.role == "primary" for c in calls), wait):
            return  # no call reached the primary: the judge says so
        if clicks == "again":
            e.wait_for(self.tag, lambda calls: any(c.role == "fallback" for c in calls), wait)
        one()

    # -- watching -----------------------------------------------------------------------------
    def _held_looks(self, ev: IntentEvidence, holds: Holds, job: str) -> list[threading.Thread]:
        """The fallback's held answer gets looks of its own: once its call arrived, two looks
        at the job from a thread of their own (a look of the watcher's that began before and
        stalls does not hold them up), then the answer goes."""
        if not holds.fallback:
            return []
        e = self.engine

        def arrived() -> bool:
            return any(c.role == "fallback" for c in e.calls(self.tag))

        def look() -> None:
            wake = threading.Event()
            deadline = e.now() + e.budget
            with e.waiting(self.tag, wake):
                while not (arrived() or holds.closed.is_set() or e.stop.is_set()
                           or e.now() > deadline):
                    wake.wait(max(0.0, deadline - e.now()))
                    wake.clear()
            for _ in range(HELD_LOOKS if arrived() else 0):
                if holds.closed.is_set() or e.stop.is_set():
                    break
                self._look(ev, job, held=True)
            e.let_go(self.tag, "fallback")
            holds.fallback = False

        return _started([look], "drill-held-looks")

    def _job(self, ev: IntentEvidence) -> str | None:
        """The job the submits named, if it can be watched: an id is data, one path segment
        (else this intent is unknown, naming it); a submit answer that was not JSON, said."""
        job = next((s.job_id for s in list(ev.submissions) if s.job_id), None)
        first = ev.submissions[0]
        if job is None and first.error and first.status is not None and first.status < 300:
            ev.cause = (f"the service answered the submit with HTTP {first.status} and "
                        f"{first.error}", "make the submit's answer JSON holding the job's id "
                        "(at drill.submit.id_field)")
        try:
            if job is not None:
                path_segment(job)
        except UnusableId as exc:
            ev.cause, job = (str(exc), "the service must answer ids that fit in a URL path "
                             "segment (no control characters, at most 1,024 characters)"), None
        return job

    def _watch(self, ev: IntentEvidence, holds: Holds, job: str) -> None:
        e = self.engine
        poll = e.poll_s
        # the budget counts from when the service took the job (a loaded service's submit
        # may itself take seconds)
        deadline = (ev.submissions[0].ended_at or ev.started_at) + e.budget
        done_at: float | None = None
        settling_since: float | None = None
        quick, calm = QUICK_LOOKS, False
        while not e.stop.is_set():
            look = self._look(ev, job)
            now = e.now()
            if done_at is None and look.status in ("succeeded", "failed"):
                done_at = now
                if ev.stopped_waiting and now > deadline:  # the drill looked on (storing)
                    ev.note += (f"; the job showed complete {now - deadline:.2f} s after it "
                                "ran out (the drill looked on for a call asked in time)")
            holds.tick(e, ev, now, done_at is not None)
            if done_at is None and now > deadline:
                if ev.budget_ended_at is None:  # the calls asked until the release are its
                    ev.budget_ended_at = e.now()  # own; the release may provoke others
                self._release(ev, "the job did not finish within the drill's budget")
                storing = self._storing_until(ev, ev.budget_ended_at)
                if storing is None or now > storing:
                    self._look(ev, job)
                    break
            if done_at is not None and settling_since is None:
                settling_since = self._settling(ev, done_at, now)
            if settling_since is not None and self._quiet(ev, now, done_at or now):
                self._look(ev, job)  # the job, read a last time
                break
            # calm once a result was seen (the judge's completion) and the drill holds nothing
            calm = calm or (look.status == "succeeded" and not (holds.primary or holds.fallback))
            if calm:  # a look at once when woken, then at the calm pace (or for an answer)
                wait = (poll if e.waiting_for_look(ev.tag) else
                        self._calm_wait(ev, now, done_at or now, settling_since is not None))
            elif quick > 0:
                wait = poll
            elif settling_since is not None:
                wait = max(e.idle_s, e.settle_s / 10)
            else:
                wait = poll if done_at is None and self._giving_up(ev, now) else e.idle_s
            quick = QUICK_LOOKS if e.pause(ev.tag, wait) else quick - 1
        self.slot.give_back()
        e.lists(ev, job)

    def _look(self, ev: IntentEvidence, job: str, *, held: bool = False) -> Observation:
        """One look at the job, kept as evidence; an answer that waits for its turn after an
        earlier answer of the intent may go after it (docs/drill.md, "Held answers"). A look
        an answer waits for goes at once (``held``)."""
        e = self.engine
        look = e.service.observe(job, held=held or e.waiting_for_look(self.tag))
        ev.observations.append(look)
        if look.status != "error":  # a look that read nothing saw nothing
            e.looked(self.tag, look.at, look.status in ("succeeded", "failed"))
        return look

    def _storing_until(self, ev: IntentEvidence, deadline: float) -> float | None:
        """The budget ran out with the job not complete: until when the drill looks on. A
        provider asked before it ran out answered less than ``settle_s`` ago: until
        ``settle_s`` after the latest such answer (on a loaded machine a service can take a
        while to store an answer it got near the budget's end; a job that never shows it is
        the judge's "stored it late or not at all"). Such a call still answering: while it
        does, at most 2 x ``provider_s`` + 0.3 s more, then that ``settle_s``. A call asked
        after the budget ran out (the drill's release provoked it) is waited for by no one.
        None: nothing to wait for."""
        e = self.engine
        calls = [c for c in e.calls(ev.tag) if c.at <= deadline]
        until = [c.ended_at + e.settle_s for c in calls
                 if c.outcome == "answered" and c.ended_at is not None]
        if any(c.ended_at is None for c in calls):
            until.append(deadline + self._patience() + e.settle_s)
        return max(until, default=None)

    def _giving_up(self, ev: IntentEvidence, now: float) -> bool:
        """The service is about to give up on a silent primary (its timeout is near) and has
        not turned to a fallback yet: look at the pace of ``poll_s``, so that a ``failed``
        shown in between is seen (once the fallback's call arrived, its held looks do)."""
        if not self.drill.timeout:
            return False
        calls = self.engine.calls(ev.tag)
        primary = next((c for c in calls if c.role == "primary"), None)
        return (primary is not None and not any(c.role == "fallback" for c in calls)
                and now >= primary.at + 0.8 * self.engine.section.timeouts.provider_s)

    def _settling(self, ev: IntentEvidence, done_at: float, now: float) -> float | None:
        """The job is complete: once no call of the tag is open, the intent only settles (its
        slot goes back); a call still open long after completion is released (noted)."""
        e = self.engine
        open_calls = e.open_calls(ev.tag)
        if not open_calls:
            self.slot.give_back()
            return now
        patience = self._patience()
        if now - done_at > patience:
            self._release(ev, f"{counted(open_calls, 'call')} still open {patience:.2f} s "
                          "after the job completed: the service never let go of them")
        return None

    def _quiet(self, ev: IntentEvidence, now: float, done_at: float) -> bool:
        """Settled: ``settle_s`` passed with no call of the tag starting or ending (and none
        open), or the settle's hard cap passed (a service that never stops calling)."""
        e = self.engine
        if now > done_at + e.budget + e.settle_s:
            ev.note = ev.note or "calls of the intent kept coming; the drill stopped settling"
            return True
        if e.open_calls(ev.tag):
            return False
        return now >= self._quiet_at(ev, done_at)

    def _quiet_at(self, ev: IntentEvidence, done_at: float) -> float:
        """When the quiet period ends, if no call of the tag starts or ends before."""
        e = self.engine
        calls = e.calls(ev.tag)
        last = max([done_at, *(c.at for c in calls),
                    *(c.ended_at for c in calls if c.ended_at is not None)])
        return last + max(e.settle_s, 2 * e.poll_s)

    def _calm_wait(self, ev: IntentEvidence, now: float, done_at: float,
                   settling: bool) -> float:
        """The pause of a calm watcher: the job is complete and the drill holds no answer of
        the intent back, so nothing the drill scripts waits on a look but an answer after an
        answer (looked at every ``poll_s``), and every arrival and end of a call wakes the
        watcher (:meth:`Engine.pause`). In between: about three looks per ``settle_s`` (a
        result that changes after completion is seen by them or by the last look), and never
        past the moment the intent settles or its open calls are released."""
        e = self.engine
        pace = max(e.idle_s, e.settle_s / 3)
        due = self._quiet_at(ev, done_at) if settling else done_at + self._patience()
        return pace if due <= now else min(pace, due - now)  # past due: calls still open

    def _patience(self) -> float:
        """How long a call may stay open after the job completed (or a chat call answered)."""
        return self.engine.section.timeouts.provider_s * 2 + 0.3

    def _settle_calls(self, ev: IntentEvidence) -> None:
        """A chat call (or a submit that made no job): the tag's calls end, then it settles."""
        e = self.engine
        if not e.wait_settled(ev.tag, self._patience()):
            self._release(ev, "a provider call was still open after the answer")
        self.slot.give_back()
        answered = ev.submissions[-1].ended_at if ev.submissions else None
        while not e.stop.is_set():
            calls = e.calls(ev.tag)
            last = max([answered or e.now(), *(c.at for c in calls),
                        *(c.ended_at for c in calls if c.ended_at is not None)])
            left = last + e.settle_s - e.now()
            if left <= 0:
                return
            e.pause(ev.tag, left)

    def _release(self, ev: IntentEvidence, why: str) -> None:
        if not ev.stopped_waiting:
            ev.stopped_waiting, ev.note = True, why
            self.engine.release(ev.tag)


def _started(targets: list[Callable[[], None]], name: str = "drill-click"
             ) -> list[threading.Thread]:
    threads = [threading.Thread(target=t, name=name, daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    return threads
