"""Run drills: serve the profile's providers as recording fakes, submit tagged intents through
the service's own API (many at once), watch each job until every provider call of its tag has
ended, and hand each intent's evidence to the judge.

I/O only; the verdicts are :mod:`harness.drill.judge`'s. One clock: the fakes and the engine
measure seconds from the same ``epoch``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.drill.drills import DRILLS, Drill, late_ms, primary_behaviour
from harness.drill.evidence import (
    IDEMPOTENCY_HEADERS,
    Call,
    IntentEvidence,
    Observation,
    Submission,
)
from harness.drill.judge import Certifier, IntentVerdict, Setup, judge_intent
from harness.drill.watch import classify, fill, listed, read_chat, unreadable
from harness.providers.recording import RecordingFake
from harness.providers.secrets import redact
from harness.target.bounded import BoundedTransport, json_body
from harness.target.drill_profile import DrillProfile, Upstream
from harness.target.ids import UnusableId, fill_path, path_segment
from harness.target.model import pick


@dataclass
class Served:
    """A provider of the profile and the fake answering in its place."""

    upstream: Upstream
    fake: RecordingFake
    server: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.upstream.host}:{self.upstream.port}"


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


@contextmanager
def serving(profile: DrillProfile, upstreams: Sequence[Upstream], epoch: float
            ) -> Iterator[list[Served]]:
    """The fakes, listening on the profile's ports (a busy port: ConfigError at its line)."""
    from harness.providers.fake_server import FakeServer  # optional extra: serve (uvicorn)

    served = [Served(u, RecordingFake(u.kind, name=u.name, signed=True, epoch=epoch))
              for u in upstreams]
    started: list[Any] = []
    try:
        for i, item in enumerate(served):
            try:
                item.server = FakeServer(item.fake, host=item.upstream.host,
                                         port=item.upstream.port)
            except ConfigError as exc:
                raise profile.error(f"{item.upstream.name}'s port {item.upstream.port} is busy: "
                                    f"{exc.args[0].splitlines()[0]}",
                                    ("drill", "providers", i, "port"),
                                    "stop what listens there, or give the provider a free "
                                    "port (${VAR} in the profile, or --port NAME=PORT)") from None
            item.server.start()
            started.append(item.server)
        yield served
    finally:
        for item in served:
            for tag in {r.tag for r in item.fake.received() if r.tag}:
                item.fake.release(tag)
        for server in started:
            server.stop()


@dataclass
class Engine:
    """One profile's drills against one running service."""

    profile: DrillProfile
    target: str
    env: Mapping[str, str]
    served: list[Served]
    epoch: float
    client: httpx.Client
    concurrency: int = 8
    stop: threading.Event = field(default_factory=threading.Event)
    _woken: dict[str, threading.Event] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for item in self.served:
            item.fake.on_change = self._changed

    def _changed(self, tag: str | None) -> None:
        """A call of ``tag`` arrived or ended: its watcher looks at the job now."""
        event = self._woken.get(tag) if tag else None
        if event is not None:
            event.set()

    def _pause(self, tag: str, seconds: float) -> bool:
        """Wait ``seconds`` between two looks at a job, or less if a call of its tag arrived or
        ended (True): the watcher looks when something happens, and slowly in between."""
        event = self._woken.setdefault(tag, threading.Event())
        woken = event.wait(seconds)
        event.clear()
        return woken and not self.stop.is_set()

    @property
    def fakes(self) -> list[tuple[str, str, str]]:
        """(name, kind, url) of every fake, for the judge's fixes and the report."""
        return [(s.upstream.name, s.upstream.kind, s.url) for s in self.served]

    def run(self, drills: Sequence[str], trials: int, *, certify: Certifier | None = None,
            on_intent: Callable[[IntentVerdict], None] | None = None) -> DrillResults:
        """Every (drill, trial) intent, ``concurrency`` at a time, each judged as it ends."""
        setup = Setup(self.section, self.fakes, certify)
        run = DrillResults(self.profile.name, self.target, trials, self.concurrency, self.fakes,
                           {name: [] for name in drills})
        jobs = [(DRILLS[name], trial) for trial in range(1, trials + 1) for name in drills]
        lock = threading.Lock()
        before = sum(len(s.fake.received()) for s in self.served)

        def one(job: tuple[Drill, int]) -> None:
            drill, trial = job
            verdict = judge_intent(self.drill_intent(drill, trial), drill, setup)
            with lock:
                run.verdicts[drill.name].append(verdict)
                if on_intent is not None:
                    on_intent(verdict)

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency),
                                thread_name_prefix="drill") as pool:
            try:
                for future in [pool.submit(one, j) for j in jobs]:
                    future.result()
            except BaseException:
                self.stop.set()  # the other intents stop watching at their next look
                raise
        run.wall_s = time.perf_counter() - started
        run.calls = sum(len(s.fake.received()) for s in self.served) - before
        for verdicts in run.verdicts.values():
            verdicts.sort(key=lambda v: v.evidence.trial)
        return run

    @property
    def section(self) -> Any:
        return self.profile.section

    def now(self) -> float:
        return time.monotonic() - self.epoch

    # -- one intent ---------------------------------------------------------------------------
    def drill_intent(self, drill: Drill, trial: int) -> IntentEvidence:
        tag = f"drill-{uuid.uuid4().hex[:12]}"
        key = f"drill-key-{uuid.uuid4().hex}"
        behaviour = primary_behaviour(drill, self.section.timeouts.provider_s)
        for item in self.served:
            item.fake.script_tag(tag, behaviour if item.upstream.role == "primary"
                                 else "conformant")
        self._woken[tag] = threading.Event()
        ev = IntentEvidence(drill.name, trial, tag, self.now())
        stream = self.section.submit.stream or drill.name == "stream-cut"
        ev.submissions.append(self._submit(tag, key, stream))
        if drill.clicks > 1 and ev.submissions[0].status is not None:
            primaries = [s.fake for s in self.served if s.upstream.role == "primary"]
            wait = self.section.timeouts.provider_s + 2
            if any(f.wait_arrival(tag, wait) for f in primaries):  # the click lands in the hang
                for _ in range(drill.clicks - 1):
                    ev.submissions.append(self._submit(tag, key, stream))
        if self.section.submit.kind == "create_job":
            self._watch(ev, drill)
        else:
            self._settle(ev, drill, since=self.now())
        ev.calls = self._calls(tag)
        ev.untagged = sum(1 for item in self.served for r in item.fake.received()
                          if r.tag is None and r.at >= ev.started_at)
        ev.ended_at = self.now()
        return ev

    def _submit(self, tag: str, key: str, stream: bool = False) -> Submission:
        submit = self.section.submit
        marks = {"{tag}": tag, "{key}": key}
        headers = {k: fill(v, marks) for k, v in self.profile.headers(self.env).items()}
        body = fill(submit.body, marks)
        at = self.now()
        try:
            if submit.kind == "chat":  # a gateway streams for the stream-cut drill
                if stream and isinstance(body, dict):
                    body = {**body, "stream": True}
                return read_chat(self.client, submit, headers, body, at, self.now, stream)
            response = self.client.request(submit.method, submit.path, json=body,
                                           headers=headers)
        except httpx.HTTPError as exc:
            return Submission(at, None, error=redact(f"{type(exc).__name__}: {exc}"),
                              ended_at=self.now())
        try:
            data, unread = json_body(response), ""
        except ValueError:
            data, unread = None, unreadable(response)
        job = pick(data, submit.id_field)
        error = unread if response.is_success else redact(response.text[:200])
        return Submission(at, response.status_code, job_id=None if job is None else str(job),
                          error=error, ended_at=self.now())

    def _watch(self, ev: IntentEvidence, drill: Drill) -> None:
        job = next((s.job_id for s in ev.submissions if s.job_id), None)
        first = ev.submissions[0]
        if job is None and first.error and first.status is not None and first.status < 300:
            ev.cause = (f"the service answered the submit with HTTP {first.status} and "
                        f"{first.error}", "make the submit's answer JSON holding the job's id "
                        "(at drill.submit.id_field)")
        try:  # an id is data: one path segment, or this intent is unknown, naming it
            path_segment(job) if job is not None else None
        except UnusableId as exc:
            ev.cause, job = (str(exc), "the service must answer ids that fit in a URL path "
                             "segment (no control characters, at most 1,024 characters)"), None
        if job is None:
            self._settle(ev, drill, since=self.now())
            return
        observe = self.section.observe
        deadline = ev.started_at + self._budget(drill)
        done_at: float | None = None
        # Quick looks (poll_s) for a while after a call of the tag arrived or ended, slower
        # ones in between when many intents run at once (their polls would load the service).
        idle = min(max(observe.poll_s, observe.poll_s * self.concurrency / 8),
                   max(observe.poll_s, self.section.timeouts.provider_s / 3))
        quick = 3
        while not self.stop.is_set():
            ev.observations.append(self._observe(job))
            terminal = ev.observations[-1].status in ("succeeded", "failed")
            now = self.now()
            if terminal and done_at is None:
                done_at = now
            if done_at is not None and self._calls_ended(ev, drill, done_at):
                break
            if now > deadline:
                self._release(ev, "the job did not finish within the drill's budget")
                ev.observations.append(self._observe(job))
                break
            quick = 3 if self._pause(ev.tag, observe.poll_s if quick > 0 else idle) \
                else quick - 1
        self._woken.pop(ev.tag, None)
        self._lists(ev, job)

    def _calls_ended(self, ev: IntentEvidence, drill: Drill, done_at: float) -> bool:
        """Every call of the tag has ended, and one more look was taken after the last end
        (a late answer has had its chance to change the result)."""
        open_calls = sum(s.fake.open_calls(ev.tag) for s in self.served)
        now = self.now()
        if open_calls:
            patience = self.section.timeouts.provider_s * 2 + 0.3
            if now - done_at > patience:
                self._release(ev, f"{counted(open_calls, 'call')} still open {patience:.2f} s "
                              "after the job completed: the service never let go of them")
                return False  # look once more after the release
            return False
        ended = [c.ended_at for c in self._calls(ev.tag) if c.ended_at is not None]
        grace = max(0.1, 2 * self.section.observe.poll_s)
        return now >= max(ended, default=0.0) + grace

    def _settle(self, ev: IntentEvidence, drill: Drill, *, since: float) -> None:
        """A chat call (or a submit that made no job): wait for the tag's calls to end."""
        patience = self.section.timeouts.provider_s * 2 + 0.3
        for item in self.served:
            if not item.fake.wait_settled_tag(ev.tag, patience):
                self._release(ev, "a provider call was still open after the answer")

    def _release(self, ev: IntentEvidence, why: str) -> None:
        if not ev.stopped_waiting:
            ev.stopped_waiting, ev.note = True, why
            for item in self.served:
                item.fake.release(ev.tag)
                item.fake.wait_settled_tag(ev.tag, 5.0)

    def _budget(self, drill: Drill) -> float:
        t = self.section.timeouts
        return t.job_s + late_ms(t.provider_s) / 1000 + 1.0

    def _observe(self, job: str) -> Observation:
        observe = self.section.observe
        at = self.now()
        try:
            response = self.client.request(
                observe.method, fill_path(observe.path, {"job_id": job}),
                headers=self.profile.headers(self.env, "observe"))
        except httpx.HTTPError as exc:
            return Observation(at, "error", None, None, None,
                               error=redact(f"no answer ({type(exc).__name__}: {exc})"))
        try:
            data = json_body(response)
        except ValueError:
            return Observation(at, "error", None, None, response.status_code,
                               error=f"HTTP {response.status_code} and {unreadable(response)}")
        raw = pick(data, observe.status_field)
        result = pick(data, observe.result_field)
        text = None if result is None else (result if isinstance(result, str)
                                            else json.dumps(result))
        return Observation(at, classify(observe.statuses, raw), None if raw is None else str(raw),
                           text, response.status_code)

    def _lists(self, ev: IntentEvidence, job: str) -> None:
        observe = self.section.observe
        headers = self.profile.headers(self.env, "observe")
        if observe.attempts is not None:
            ev.attempts = listed(self.client, observe.attempts, job, headers)
        if observe.races is not None:
            ev.races = listed(self.client, observe.races, job, headers)
            # Two answers reached the service: the loser's race may still be being written (a
            # loaded service; seen: 1.4 s); look again, quickly, before judging it missing.
            answered = sum(c.outcome == "answered" for c in self._calls(ev.tag))
            deadline = self.now() + max(2.0, 2 * self.section.timeouts.provider_s + 0.3)
            while answered > 1 and not ev.races and self.now() < deadline \
                    and not self.stop.wait(observe.poll_s):
                ev.races = listed(self.client, observe.races, job, headers)

    def _calls(self, tag: str) -> list[Call]:
        out = []
        for item in self.served:
            for r in item.fake.received():
                if r.tag == tag:
                    out.append(Call(item.upstream.name, item.upstream.role, r.seq, r.at,
                                    r.ended_at, r.outcome, r.behaviour, r.status, r.stream,
                                    any(h in r.headers for h in IDEMPOTENCY_HEADERS)))
        return sorted(out, key=lambda c: c.at)


@contextmanager
def drilling(profile: DrillProfile, *, target: str, env: Mapping[str, str],
             ports: Mapping[str, int] | None = None, concurrency: int = 8) -> Iterator[Engine]:
    """The fakes listening and a client for the service: ConfigError for a profile, variable or
    port problem before anything is drilled (so a caller opens its report after this)."""
    upstreams = profile.upstreams(env, ports)
    profile.headers(env)  # an unset ${VAR} fails here, before anything runs
    profile.headers(env, "observe")
    epoch = time.monotonic()
    t = profile.section.timeouts
    client_timeout = t.job_s + late_ms(t.provider_s) / 1000 + 5
    # every request to the service: a total deadline (the intent's budget) and a body limit
    transport = BoundedTransport(deadline_s=client_timeout, limits=httpx.Limits(
        max_connections=max(10, concurrency * 3)))
    with serving(profile, upstreams, epoch) as served, httpx.Client(
            base_url=target.rstrip("/"), timeout=client_timeout, transport=transport) as client:
        yield Engine(profile, target, env, served, epoch, client, concurrency=concurrency)


def run_drills(profile: DrillProfile, *, target: str, env: Mapping[str, str],
               drills: Sequence[str], trials: int = 1, concurrency: int = 8,
               ports: Mapping[str, int] | None = None, certify: Certifier | None = None,
               on_intent: Callable[[IntentVerdict], None] | None = None) -> DrillResults:
    """Drill ``target`` (a running service) with every named drill, ``trials`` intents each,
    ``concurrency`` at a time; ConfigError for a profile or port problem (nothing started)."""
    with drilling(profile, target=target, env=env, ports=ports,
                  concurrency=concurrency) as engine:
        return engine.run(drills, trials, certify=certify, on_intent=on_intent)
