"""Play a scenario against a target: steps become timed events, events become history ops.

The scheduler owns virtual time; every target call is recorded as invoke → ok | fail | info.
A concurrent group of N identical requests really runs on N threads released together by a
barrier — and, with an arrival pattern other than ``burst``, spaced in real time after it
(:mod:`harness.scenarios.arrivals`); its ops are written in a canonical order (all invokes, then
the completions sorted), because identical requests are interchangeable and the history must not
depend on which thread the OS ran first. A target with a side-effect counter is read before and
after the run (``side_effects`` ops). Checkers then judge the history
(:mod:`harness.scenarios.checkers`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from harness.domain import payload_digest
from harness.domain.clock import EPOCH, ManualClock, rfc3339
from harness.scenarios import arrivals
from harness.scenarios.checkers import CheckResult, run_checkers, verdict_of
from harness.scenarios.history import History, Op, OpType
from harness.scenarios.model import (
    Cancel,
    Crash,
    Create,
    Fault,
    ListAttempts,
    ListRaces,
    Read,
    RunAttempt,
    Scenario,
    Step,
)
from harness.scenarios.scheduler import (
    ChoiceSource,
    Event,
    RecordedChoices,
    Scheduler,
    SeededChoices,
)
from harness.scenarios.targets.base import Reply, Target, TargetSession
from harness.scenarios.values import (
    Aliases,
    attempt_value,
    error_value,
    job_value,
    list_value,
    reply_extras,
)

_RANK = {"ok": 0, "fail": 1, "info": 2}
BARRIER_TIMEOUT_S = arrivals.BARRIER_TIMEOUT_S


@dataclass
class RunResult:
    """One scenario run: the verdict, the checks, the history and the schedule."""

    scenario: Scenario
    target: str
    target_kind: str
    seed: int
    run_id: str
    status: str  # passed | violated | unknown | not_applicable
    reason: str | None = None
    checks: list[CheckResult] = field(default_factory=list)
    history: list[Op] = field(default_factory=list)
    schedule: list[dict[str, Any]] = field(default_factory=list)
    virtual_seconds: float = 0.0
    elapsed_s: float = 0.0
    folder: Any = None  # the run folder, once written
    arrival: str | None = None  # the arrival pattern of its concurrent groups (None: no group)
    arrivals: list[dict[str, Any]] = field(default_factory=list)  # each group's plan


def run_scenario(
    scenario: Scenario,
    target: Target,
    *,
    seed: int | None = None,
    choices: ChoiceSource | None = None,
    run_id: str | None = None,
    arrival: str | None = None,
) -> RunResult:
    """Run ``scenario`` on ``target`` in virtual time and judge the history.

    ``arrival`` is the pattern of its concurrent groups (default: the first of the scenario's
    ``arrival.patterns``, else ``burst``); its offsets come from ``seed``."""
    seed = scenario.seed if seed is None else seed
    run_id = run_id or secrets.token_hex(5)
    base = RunResult(scenario, target.description, target.kind, seed, run_id, "not_applicable")
    if scenario.has_groups:
        base.arrival = arrival or (scenario.arrival.patterns[0] if scenario.arrival else "burst")
        arrivals.fractions(base.arrival, 0, seed=seed, step=0)  # an unknown pattern fails here
    reason = target.not_applicable(scenario)
    if reason:
        base.reason = reason
        return base
    if choices is None:
        choices = (RecordedChoices(scenario.schedule) if scenario.schedule is not None
                   else SeededChoices(seed))
    started = time.perf_counter()
    clock = ManualClock(EPOCH)
    scheduler = Scheduler(clock=clock, choices=choices)
    history = History(now=lambda: (scheduler.now, rfc3339(clock.now())))
    concurrency = max(step.concurrent for step in scenario.steps)
    with target.session(clock, run_id, concurrency) as session:
        play = _Play(scenario, session, scheduler, history, run_id)
        play.target, play.seed, play.pattern = target, seed, base.arrival or "burst"
        play.run()
    checks = run_checkers(scenario.checkers, history.ops)
    base.status = verdict_of(checks)
    base.checks, base.history, base.schedule = checks, history.ops, scheduler.schedule
    base.arrivals = play.plans
    base.virtual_seconds = scheduler.now
    base.elapsed_s = time.perf_counter() - started
    return base


def concurrently(call: Callable[[], Reply], n: int,
                 offsets_s: tuple[float, ...] | None = None) -> list[Reply]:
    """Run ``call`` on ``n`` threads released at once by a barrier (copy *i* then waits
    ``offsets_s[i]`` before it sends, when given); the replies in thread order."""
    replies, _ = arrivals.send_spaced(call, offsets_s or (0.0,) * n)
    return replies


class _Play:
    """The events of one run."""

    def __init__(
        self,
        scenario: Scenario,
        session: TargetSession,
        scheduler: Scheduler,
        history: History,
        run_id: str,
    ) -> None:
        self.scenario = scenario
        self.session = session
        self.scheduler = scheduler
        self.history = history
        self.run_id = run_id
        self.aliases = Aliases()
        self.jobs: dict[str, str | None] = {}
        self.attempts: dict[str, str | None] = {}
        self.timeouts: dict[str, Event] = {}
        self.target: Target | None = None
        self.seed, self.pattern = 0, "burst"
        self.plans: list[dict[str, Any]] = []

    # -- scheduling ---------------------------------------------------------------------------
    def run(self) -> None:
        for step in self.scenario.steps:
            process, what = self._describe(step)
            self.scheduler.at(
                step.at, process, what, partial(self._step, step), needs=step.names_used()
            )
        self._observe("start")
        self.scheduler.run()
        self._observe("end")

    def _observe(self, moment: str) -> None:
        """Read the target's side-effect counter, when it has one, into the history."""
        if self.target is None or "side_effects" not in self.target.capabilities:
            return
        count = self.session.count_side_effects  # type: ignore[attr-defined]
        invoke = self.history.invoke("observer", "side_effects", {"at": moment})
        self.history.complete(invoke, "ok", {"count": count()})

    @staticmethod
    def _describe(step: Step) -> tuple[str, str]:
        action = step.action
        if isinstance(action, Create):
            return step.actor, f"create {step.save or action.key}"
        if isinstance(action, RunAttempt):
            return f"worker:{action.name}", f"start {action.name}"
        if isinstance(action, Crash):
            return "nemesis", f"crash {action.attempt}"
        if isinstance(action, Cancel):
            return step.actor, f"cancel {action.attempt}"
        if isinstance(action, Fault):
            return "nemesis", f"fault {action.kind}"
        return step.actor, f"{step.kind} {step.names_used()[0]}"

    def _step(self, step: Step) -> None:
        action = step.action
        if isinstance(action, Create):
            self._create(step, action)
        elif isinstance(action, Read):
            self._read(step, action.job)
        elif isinstance(action, ListAttempts | ListRaces):
            self._list(step, action)
        elif isinstance(action, RunAttempt):
            self._start(step, action)
        elif isinstance(action, Cancel):
            self._cancel(step, action)
        elif isinstance(action, Crash):
            self._crash(action)
        elif isinstance(action, Fault):
            self._fault(action)
        for name in step.names_defined():
            self.scheduler.settle(name)

    # -- recording ----------------------------------------------------------------------------
    def _record(
        self,
        process: str,
        f: str,
        value: dict[str, Any],
        call: Callable[[], Reply],
        on_ok: Callable[[Reply], dict[str, Any]],
        n: int = 1,
        name_first: Callable[[Reply], None] | None = None,
        offsets_s: tuple[float, ...] | None = None,
    ) -> list[Reply]:
        """Invoke ``call`` (``n`` times at once), record the ops, return the replies."""
        if n == 1:
            invoke = self.history.invoke(process, f, value)
            reply = call()
            if name_first and reply.ok:
                name_first(reply)
            type_, result = self._judge(reply, on_ok)
            self.history.complete(invoke, type_, result)
            return [reply]
        replies = concurrently(call, n, offsets_s)
        replies.sort(key=lambda r: (_RANK[_type(r)], -r.status, r.code))
        oks = [r for r in replies if r.ok]
        if name_first and oks:
            name_first(oks[0])
        judged = [self._judge(r, on_ok) for r in replies]
        order = sorted(range(n), key=lambda i: (_RANK[judged[i][0]],
                                                not judged[i][1].get("created"),
                                                _canon(judged[i][1])))
        invokes = [self.history.invoke(f"{process}/{i + 1}", f, value) for i in range(n)]
        for invoke, i in zip(invokes, order, strict=True):
            self.history.complete(invoke, *judged[i])
        return [replies[i] for i in order]

    def _judge(
        self, reply: Reply, on_ok: Callable[[Reply], dict[str, Any]]
    ) -> tuple[OpType, dict[str, Any]]:
        lease = self.target.promises().get("lease_ms") if self.target is not None else None
        if reply.ok:
            return "ok", {**on_ok(reply), **reply_extras(reply, lease)}
        return _type(reply), {**error_value(reply, self.aliases), **reply_extras(reply, lease)}

    @staticmethod
    def _expect(step: Step, key: str | None = None) -> dict[str, Any]:
        if step.expect is None:
            return {}
        wanted = step.expect if key is None else step.expect.get(key)
        if wanted is None:
            return {}
        return {"expect": {} if wanted == "ok" else wanted}

    # -- jobs ---------------------------------------------------------------------------------
    def _create(self, step: Step, action: Create) -> None:
        intent = action.intent
        owner = step.actor
        key = f"{self.run_id}-{action.key}"
        fingerprint = intent.fingerprint
        if self.target is not None and self.target.fingerprint_mode == "bytes":
            fingerprint = hashlib.sha256(intent.text.encode("utf-8")).hexdigest()
        value = {"owner": owner, "key": action.key, "fingerprint": fingerprint,
                 "max_open_attempts": intent.max_open_attempts, **self._expect(step)}

        def on_ok(reply: Reply) -> dict[str, Any]:
            return {**job_value(reply.body, self.aliases), "created": reply.status == 201}

        def name_first(reply: Reply) -> None:
            raw = reply.body.get("id") if isinstance(reply.body, dict) else None
            if step.save and raw is not None:
                self.jobs[step.save] = str(raw)
                self.aliases.name(str(raw), step.save)

        offsets = None
        if step.concurrent > 1:
            offsets = self._plan(step, value, on_ok).offsets_s
        self._record(owner, "create", value,
                     lambda: self.session.create_job(owner, key, intent.text),
                     on_ok, n=step.concurrent, name_first=name_first, offsets_s=offsets)

    def _plan(self, step: Step, value: dict[str, Any],
              on_ok: Callable[[Reply], dict[str, Any]]) -> arrivals.ArrivalPlan:
        """The group's arrival plan; first, when the pattern needs it, the latency of a first
        request, measured on fresh keys (recorded as ``calibrate`` creates)."""
        action = step.action
        assert isinstance(action, Create)
        spec = self.scenario.arrival
        window = spec.window_ms if spec else None
        latency = None
        if arrivals.needs_latency(self.pattern, window):
            samples = []
            for i in range(arrivals.CALIBRATION_SAMPLES):
                key = f"{action.key}~calibrate{i + 1}"
                raw_key = f"{self.run_id}-{key}"
                invoke = self.history.invoke("calibrate", "create", {
                    **{k: v for k, v in value.items() if k != "expect"}, "key": key})
                reply, took = arrivals.timed(partial(self.session.create_job, step.actor,
                                                     raw_key, action.intent.text))
                self.history.complete(invoke, *self._judge(reply, on_ok))
                samples.append(took)
            latency = arrivals.median_latency_ms(samples)
        plan = arrivals.plan(self.pattern, step.concurrent, seed=self.seed, step=step.index,
                             latency_ms=latency, window_ms=window)
        self.plans.append({"step": step.index, **plan.to_json()})
        return plan

    def _read(self, step: Step, job: str) -> None:
        raw = self.jobs.get(job)
        if raw is None:
            return  # the job was never created: nothing to read
        owner = step.actor
        self._record(owner, "read", {"owner": owner, "job": job, **self._expect(step)},
                     lambda: self.session.get_job(owner, raw),
                     lambda r: job_value(r.body, self.aliases), n=step.concurrent)

    def _list(self, step: Step, action: ListAttempts | ListRaces) -> None:
        raw = self.jobs.get(action.job)
        if raw is None:
            return
        owner = step.actor
        key = "attempts" if isinstance(action, ListAttempts) else "races"
        call = self.session.list_attempts if key == "attempts" else self.session.list_races
        self._record(owner, key, {"owner": owner, "job": action.job, **self._expect(step)},
                     lambda: call(owner, raw), lambda r: list_value(r.body, self.aliases, key))

    # -- a worker's attempt ---------------------------------------------------------------------
    def _start(self, step: Step, action: RunAttempt) -> None:
        raw_job = self.jobs.get(action.job)
        if raw_job is None:
            return
        owner, process = step.actor, f"worker:{action.name}"

        def name_first(reply: Reply) -> None:
            raw = reply.body.get("id") if isinstance(reply.body, dict) else None
            if raw is not None:
                self.attempts[action.name] = str(raw)
                self.aliases.name(str(raw), action.name)

        value = {"owner": owner, "job": action.job, "provider": action.provider.name,
                 "attempt": action.name, **self._expect(step, "start")}
        (reply,) = self._record(
            process, "start", value,
            lambda: self.session.start_attempt(owner, raw_job, action.provider.name),
            lambda r: attempt_value(r.body, self.aliases), name_first=name_first,
        )
        if reply.ok and action.name in self.attempts:
            self.scheduler.at(self.scheduler.now, process, f"dispatch {action.name}",
                              partial(self._dispatch, step, action))

    def _event(self, step: Step, action: RunAttempt, f: str, body: dict[str, Any],
               extra: dict[str, Any]) -> Reply:
        raw = self.attempts[action.name]
        assert raw is not None
        owner = step.actor
        value = {"owner": owner, "attempt": action.name, **extra, **self._expect(step, f)}
        (reply,) = self._record(
            f"worker:{action.name}", f, value,
            lambda: self.session.post_event(owner, raw, body),
            lambda r: attempt_value(r.body, self.aliases),
        )
        return reply

    def _dispatch(self, step: Step, action: RunAttempt) -> None:
        reply = self._event(step, action, "dispatched", {"type": "dispatched"}, {})
        if not reply.ok:
            return
        now, process, provider = self.scheduler.now, f"worker:{action.name}", action.provider
        if provider.outcome != "hang":
            self.scheduler.at(now + provider.latency, process, f"reply {action.name}",
                              partial(self._reply, step, action))
        if action.timeout is not None:
            self.timeouts[action.name] = self.scheduler.at(
                now + action.timeout, process, f"timeout {action.name}",
                partial(self._timeout, step, action),
            )

    def _timeout(self, step: Step, action: RunAttempt) -> None:
        self.timeouts.pop(action.name, None)
        self._event(step, action, "timed_out", {"type": "timed_out"}, {})

    def _reply(self, step: Step, action: RunAttempt) -> None:
        waiting = self.timeouts.pop(action.name, None)
        if waiting is not None and waiting in self.scheduler.pending:
            self.scheduler.pending.remove(waiting)  # the answer came first: no timeout
        provider = action.provider
        if provider.outcome == "result":
            result = provider.result or {}
            self._event(step, action, "succeeded", {"type": "succeeded", "result": result},
                        {"result_sha256": payload_digest(result)})
        else:
            error = provider.error or {"code": "provider_error"}
            self._event(step, action, "failed", {"type": "failed", "error": error},
                        {"error": error.get("code")})

    def _cancel(self, step: Step, action: Cancel) -> None:
        raw = self.attempts.get(action.attempt)
        if raw is None:
            return  # the attempt never started
        owner = step.actor
        value = {"owner": owner, "attempt": action.attempt, "reason": action.reason,
                 **self._expect(step)}
        self._record(owner, "cancelled", value,
                     lambda: self.session.post_event(
                         owner, raw, {"type": "cancelled", "reason": action.reason}),
                     lambda r: attempt_value(r.body, self.aliases))

    def _fault(self, action: Fault) -> None:
        value: dict[str, Any] = {"fault": action.kind}
        if self.target is not None:
            value.update(self.target.promises())
        invoke = self.history.invoke("nemesis", "fault", value)
        reply = self.session.inject_fault(action.kind)  # type: ignore[attr-defined]
        if reply.ok:
            self.history.complete(invoke, "ok", {"armed": True})
        else:
            self.history.complete(invoke, _type(reply), error_value(reply, self.aliases))

    def _crash(self, action: Crash) -> None:
        invoke = self.history.invoke("nemesis", "crash", {"attempt": action.attempt})
        dropped = self.scheduler.cancel_process(f"worker:{action.attempt}")
        self.timeouts.pop(action.attempt, None)
        self.history.complete(invoke, "info", {
            "attempt": action.attempt, "dropped": [e.what for e in dropped],
        })


def _type(reply: Reply) -> OpType:
    if reply.ok:
        return "ok"
    return "info" if reply.indeterminate else "fail"


def _canon(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, default=str)
