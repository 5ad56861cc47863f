"""``check --target`` with a profile whose ``drill:`` section names the service's providers:
the drills run beside the scenarios (:mod:`harness.drill.beside`: at the same time, their key
spaces apart), the scenarios' side effects are the billed provider calls the drill's fakes count
(when the profile names no counter), and the scenarios a jobs-only service cannot play
(timeouts, out-of-order completions, late results, the hedge bound) are judged by the drill
instead of "not applicable" — with its verdict and evidence, or unknown with the reason.

The command calls :func:`open_check_drill` before it opens its report (a port or profile problem
exits 2 with nothing written), then :meth:`CheckDrill.run` with the session and the
scenarios' part.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.domain.verdicts import CheckVerdict, Outcome, ScenarioVerdict
from harness.domain.words import counted, of
from harness.drill.beside import count_provider_calls, run_beside
from harness.drill.drills import NAMES
from harness.drill.engine import DrillResults, Engine, drilling
from harness.drill.judge import PROMISES
from harness.drill.summary import drill_events
from harness.scenarios.events import Check, ScenarioRun, Unknown, Violation
from harness.target.drill_profile import DrillProfile, load_drill
from harness.yamlsrc import load_yaml

CHECK_TRIALS = 3
#: a shipped scenario a jobs-only service cannot play → the drills and promises that judge it
JUDGED_BY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "timeout_unknown": (("hang", "late"), ("timeout_not_failure",)),
    "timeout_while_still_running": (("hang", "double-click"),
                                    ("timeout_not_failure", "one_job", "within_hedge")),
    "out_of_order_completion": (("late",), ("one_winner",)),
    "late_result_after_completion": (("late",), ("one_winner",)),
    "cancel_then_late_result": (("late",), ("one_winner", "billed_within_bound")),
    "hedge_bound": (("hang", "late"), ("within_hedge", "billed_within_bound")),
}


class Beside:
    """The report session as the scenarios see it while the drill runs: every call goes to the
    session, but the events the drill judges (``holds``) are kept until it has its results."""

    def __init__(self, session: Any, holds: Callable[[Any], bool]) -> None:
        self.session = session
        self.holds = holds
        self.held: list[Any] = []

    def emit(self, event: Any) -> Any:
        if self.holds(event):
            self.held.append(event)
            return event
        return self.session.emit(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _command(target: str, profile: str, drills: tuple[str, ...], trials: int) -> str:
    return shlex.join(["failover-harness", "drill", "--target", target, "--target-profile",
                       profile, "--drills", ",".join(drills), "--trials", str(trials)])


@dataclass
class CheckDrill:
    """The fakes of a profile, started; the drills' results once run."""

    profile: DrillProfile
    target: str
    engine: Engine
    stack: ExitStack
    results: DrillResults | None = None
    trials: int = CHECK_TRIALS
    judged: dict[str, ScenarioRun] = field(default_factory=dict)
    #: the fakes count the scenarios' side effects (billed provider calls)
    lent: bool = False

    def close(self) -> None:
        self.stack.close()

    def run(self, session: Any, scenarios: Callable[[Any], None],
            trials: int | None = None) -> None:
        """The drills and ``scenarios(session)`` in one run (:func:`run_beside`: at the same
        time); the scenarios' side effects counted as billed provider calls when the profile
        names no counter; the scenarios the drill judges held back until it has, then judged."""
        self.trials = trials or CHECK_TRIALS
        fakes = ", ".join(f"{n} ({k}) at {u}" for n, k, u in self.engine.fakes)
        session.say(f"drills: {self.profile.name}'s providers served at {fakes}")
        if self.lent:
            session.say("side effects: billed provider calls of the scenarios' jobs, counted by "
                        "the drill's fakes (the profile names no counter)")
        beside = Beside(session, self.judges)
        self.results = run_beside(self.engine, lambda: scenarios(beside),
                                  drills=list(NAMES), trials=self.trials)
        for event in drill_events(self.results, lambda name: _command(
                self.target, self.profile.path, (name,), self.trials)):
            session.emit(event)
        for event in beside.held:
            session.emit(self.rejudge(event))

    def judges(self, event: Any) -> bool:
        """Is ``event`` a "not applicable" run of a scenario the drill judges?"""
        return (isinstance(event, ScenarioRun) and event.verdict == "not_applicable"
                and event.scenario in JUDGED_BY)

    def rejudge(self, event: Any) -> Any:
        """A "not applicable" run of a scenario the drill judges, judged by the drill."""
        if not self.judges(event) or self.results is None:
            return event
        drills, promises = JUDGED_BY[event.scenario]
        verdicts = [v for d in drills for v in self.results.verdicts.get(d, [])]
        findings = [f for v in verdicts for f in v.findings if f.promise in promises]
        broken = [f for f in findings if f.verdict == "broken"]
        unknown = [f for f in findings if f.verdict == "unknown"]
        held = [f for f in findings if f.verdict == "held"]
        # an intent the drill could not run at all (no provider call) is unknown for everything
        unknown += [f for v in verdicts for f in v.findings
                    if f.verdict == "unknown" and f.promise == "completed" and not v.evidence.calls]
        what = " and ".join(PROMISES[p] for p in promises)
        rate = (f"{of(len(broken), len(verdicts), 'intent')} broke it" if broken
                else f"held in {counted(len(held), 'finding')} over "
                     f"{counted(len(verdicts), 'intent')}")
        reason = (f"judged by the drill ({', '.join(drills)}, {counted(self.trials, 'trial')} "
                  f"each): {rate}")
        verdict: ScenarioVerdict = "passed"
        outcome: Outcome = "pass"
        check: CheckVerdict = "valid"
        if broken:
            verdict, outcome, check = "failed", "fail", "invalid"
        elif unknown or not held:
            verdict, outcome, check = "unknown", "unknown", "unknown"
            if not held and not unknown:
                reason = "judged by the drill, which saw no evidence for it"
        return replace(
            event, verdict=verdict, outcome=outcome, source="drill", reason=reason,
            fix=unknown[0].fix if unknown and not broken else "",
            replay_command=_command(self.target, self.profile.path, drills, self.trials),
            checks=(Check(name="drill", promise=f"{what} (judged by the drill)",
                          verdict=check,
                          violations=tuple(Violation(f.message, kind=f.promise)
                                           for f in broken[:3]),
                          unknowns=tuple(Unknown(f.message, f.fix) for f in unknown[:1])),))


def open_check_drill(target: str | None, profile_path: str | None,
                     env: Mapping[str, str], scenarios_target: Any = None) -> CheckDrill | None:
    """The profile's drills, fakes listening (None: no profile, or no drill: section);
    ConfigError for a profile, variable or port problem. Opened before the target's preflight:
    the fakes then count the side effects of ``scenarios_target`` from its first request on
    (when its profile names no counter)."""
    if not target or not profile_path:
        return None
    src = load_yaml(Path(profile_path))
    if not isinstance(src.data, dict) or "drill" not in src.data:
        return None
    profile = load_drill(profile_path)
    url = target.split(",")[0]
    stack = ExitStack()
    engine = stack.enter_context(drilling(profile, target=url, env=env, concurrency=16))
    lent = scenarios_target is not None and count_provider_calls(scenarios_target, engine)
    return CheckDrill(profile, url, engine, stack, lent=lent)
