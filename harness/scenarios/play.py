"""One scenario's steps played against a target session: each step becomes timed events on the
scheduler, each target call an invoke → ok | fail | info pair in the history; concurrent groups
run on threads released together (:mod:`harness.scenarios.arrivals`). A step that cannot run,
and an expected reply that never came, are kept with the reason and the likely fix
(``Play.unrun``, ``Play.missing_replies``): :mod:`harness.scenarios.runner` judges the run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from harness.domain import payload_digest
from harness.scenarios import arrivals
from harness.scenarios.groups import record_group
from harness.scenarios.history import History, OpType
from harness.scenarios.model import (
    Cancel,
    Crash,
    Create,
    Fault,
    IntentSpec,
    ListAttempts,
    ListRaces,
    Read,
    RunAttempt,
    Scenario,
    Step,
)
from harness.scenarios.scheduler import (
    Event,
    Scheduler,
)
from harness.scenarios.targets.base import Reply, Target, TargetSession
from harness.scenarios.targets.side_effects import CounterUnsettled
from harness.scenarios.unrun import describe, missing_replies, where
from harness.scenarios.values import (
    Aliases,
    attempt_value,
    error_value,
    fingerprint_as_compared,
    job_value,
    likely_fix,
    list_value,
    op_type,
    reply_extras,
)

BARRIER_TIMEOUT_S = arrivals.BARRIER_TIMEOUT_S


class Play:
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
        self.unrun: list[dict[str, Any]] = []
        #: name → why the step that should have bound it did not (a refusal, no answer)
        self.unbound: dict[str, tuple[str, str]] = {}
        #: (step index, reply key) → recorded: which expected replies were seen
        self.replied: set[tuple[int, str | None]] = set()
        #: attempt name → why its worker stopped before its scripted replies
        self.stopped: dict[str, tuple[str, str]] = {}

    # -- scheduling ---------------------------------------------------------------------------
    def run(self) -> None:
        for step in self.scenario.steps:
            process, what = describe(step)
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
        if self.target.counts_side_effects_when_judged and "one_side_effect_per_click" not in {
                *self.scenario.checkers, *self.scenario.optional_checkers}:
            return  # a store's counter is read only where a checker judges it
        count = self.session.count_side_effects  # type: ignore[attr-defined]
        try:
            self.history.observe_side_effects(moment, count())
        except CounterUnsettled as exc:  # the service was still working: unknown, with why
            self.history.observe_side_effects(moment, None, why=str(exc))

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
        copies: list[tuple[dict[str, Any], Callable[[], Reply]]] | None = None,
        times: dict[str, Any] | None = None,
    ) -> list[Reply]:
        """Invoke ``call`` (``n`` times at once), record the ops, return the replies.
        ``copies``: per copy, its own invoke value and call (a mixed group); ``times``: the
        group's plan, which gets when each copy went (:func:`.groups.record_group`)."""
        if n == 1:
            invoke = self.history.invoke(process, f, value)
            reply = call()
            if name_first and reply.ok:
                name_first(reply)
            type_, result = self._judge(reply, on_ok)
            self.history.complete(invoke, type_, result)
            return [reply]
        return record_group(self.history, process, f, copies or [(value, call)] * n,
                            offsets_s or (0.0,) * n, partial(self._judge, on_ok=on_ok),
                            name_first, times)

    def _judge(
        self, reply: Reply, on_ok: Callable[[Reply], dict[str, Any]]
    ) -> tuple[OpType, dict[str, Any]]:
        lease = self.target.promises().get("lease_ms") if self.target is not None else None
        if reply.ok:
            return "ok", {**on_ok(reply), **reply_extras(reply, lease)}
        return op_type(reply), {**error_value(reply, self.aliases), **reply_extras(reply, lease)}

    def _expect(self, step: Step, key: str | None = None) -> dict[str, Any]:
        if step.expect is None:
            return {}
        wanted = step.expect if key is None else step.expect.get(key)
        if wanted is None:
            return {}
        self.replied.add((step.index, key))
        wanted = {} if wanted == "ok" else dict(wanted)
        op = key or {"cancel": "cancelled"}.get(step.kind, step.kind)
        unmapped = sorted(self.target.unmapped(op) & set(wanted)) if self.target else []
        if not unmapped:
            return {"expect": wanted}
        # a field the profile does not map is no promise of the target: not judged, and said so
        return {"expect": {k: v for k, v in wanted.items() if k not in unmapped},
                "unmapped": unmapped}

    # -- steps that did not happen -------------------------------------------------------------
    def _refused(self, step: Step, reply: Reply, what: str = "") -> tuple[str, str]:
        """Why ``step`` did not give the script what it needs, and the likely fix."""
        answer = (f"got no answer ({reply.detail or reply.code})" if reply.status == 0
                  else f"was refused {reply.status} {reply.code}")
        return f"{where(step)}{what} {answer}", likely_fix(reply)

    def _not_run(self, step: Step, name: str) -> None:
        why, fix = self.unbound.get(name, (f"no earlier step bound {name!r}",
                                           "check the scenario's save: and names"))
        self.unrun.append({"step": step.index + 1, "line": step.line, "kind": step.kind,
                           "why": f"{where(step)} did not run: {why}", "fix": fix})

    def missing_replies(self) -> list[dict[str, Any]]:
        """Expected replies of steps that ran but never came (a worker that stopped early)."""
        return missing_replies(self.scenario, self.unrun, self.replied, self.stopped)

    # -- jobs ---------------------------------------------------------------------------------
    def _sent(self, intent: IntentSpec) -> IntentSpec:
        """The intent as the target is sent it (a profile's body template)."""
        return self.target.as_sent(intent) if self.target is not None else intent

    def _create(self, step: Step, action: Create) -> None:
        intent = self._sent(action.intent)
        owner = step.actor
        key = f"{self.run_id}-{action.key}"
        value = {"owner": owner, "key": action.key, "fingerprint": fingerprint_as_compared(
                     intent, self.target.fingerprint_mode if self.target else "canonical"),
                 "max_open_attempts": intent.max_open_attempts, **self._expect(step)}
        # unmarked replays (a profile's replay: unmarked): "created" is not observable
        seen = self.target is None or "created" not in self.target.unmapped("create")

        def on_ok(reply: Reply) -> dict[str, Any]:
            made = {"created": reply.status == 201} if seen else {}
            return {**job_value(reply.body, self.aliases), **made}

        def name_first(reply: Reply) -> None:
            raw = reply.body.get("id") if isinstance(reply.body, dict) else None
            if step.save and raw is not None:
                self.jobs[step.save] = str(raw)
                self.aliases.name(str(raw), step.save)

        offsets, planned = None, None
        if step.concurrent > 1:
            offsets = self._plan(step, value, on_ok).offsets_s
            planned = self.plans[-1]
        copies = None
        if action.others:
            copies = [self._copy(step, action, value, key, i) for i in range(step.concurrent)]
        replies = self._record(owner, "create", value,
                               lambda: self.session.create_job(owner, key, intent.text),
                               on_ok, n=step.concurrent, name_first=name_first,
                               offsets_s=offsets, copies=copies, times=planned)
        if step.save and step.save not in self.jobs:
            self.unbound[step.save] = self._refused(step, replies[0])

    def _copy(self, step: Step, action: Create, value: dict[str, Any], key: str,
              i: int) -> tuple[dict[str, Any], Callable[[], Reply]]:
        """Copy ``i`` of a mixed group: its invoke value and its request."""
        intent = self._sent(action.intent_of_copy(i))
        mine = {**value, "fingerprint": fingerprint_as_compared(
                     intent, self.target.fingerprint_mode if self.target else "canonical"),
                "max_open_attempts": intent.max_open_attempts}
        return mine, partial(self.session.create_job, step.actor, key, intent.text)

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
                                                     raw_key, self._sent(action.intent).text))
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
            self._not_run(step, job)  # the job was never created: nothing to read
            return
        owner = step.actor
        self._record(owner, "read", {"owner": owner, "job": job, **self._expect(step)},
                     lambda: self.session.get_job(owner, raw),
                     lambda r: job_value(r.body, self.aliases), n=step.concurrent)

    def _list(self, step: Step, action: ListAttempts | ListRaces) -> None:
        raw = self.jobs.get(action.job)
        if raw is None:
            self._not_run(step, action.job)
            return
        owner = step.actor
        key = "attempts" if isinstance(action, ListAttempts) else "races"
        call = self.session.list_attempts if key == "attempts" else self.session.list_races
        value: dict[str, Any] = {"owner": owner, "job": action.job, **self._expect(step)}
        digest = self.target.race_digest if self.target is not None else "none"
        if key == "races" and digest != "none":
            value["race_digest"] = digest  # the declared scheme: digests may be compared
        self._record(owner, key, value,
                     lambda: call(owner, raw), lambda r: list_value(r.body, self.aliases, key))

    # -- a worker's attempt ---------------------------------------------------------------------
    def _start(self, step: Step, action: RunAttempt) -> None:
        raw_job = self.jobs.get(action.job)
        if raw_job is None:
            self._not_run(step, action.job)
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
        else:
            self.unbound[action.name] = self.stopped[action.name] = self._refused(
                step, reply, "'s start")

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
            self.stopped[action.name] = self._refused(step, reply, "'s dispatched event")
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
            self._not_run(step, action.attempt)  # the attempt never started
            return
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
            self.history.complete(invoke, op_type(reply), error_value(reply, self.aliases))

    def _crash(self, action: Crash) -> None:
        self.stopped.setdefault(action.attempt, (f"its worker was crashed by the script "
                                                 f"(crash: {action.attempt})",
                                                 "expect no reply after a crash"))
        invoke = self.history.invoke("nemesis", "crash", {"attempt": action.attempt})
        dropped = self.scheduler.cancel_process(f"worker:{action.attempt}")
        self.timeouts.pop(action.attempt, None)
        self.history.complete(invoke, "info", {
            "attempt": action.attempt, "dropped": [e.what for e in dropped],
        })
