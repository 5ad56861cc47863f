"""``check --target`` with a profile whose ``drill:`` section names the service's providers:
the drills run beside the scenarios (:mod:`harness.drill.beside`: at the same time, their key
spaces apart), the scenarios' side effects are the calls to the primary provider the drill's
fakes count (one per handler run, when the profile names no counter), and the scenarios a
jobs-only service cannot play (timeouts, out-of-order completions, late results, the hedge
bound) are judged by the drill instead of "not applicable" — with its verdict and evidence, or
unknown with the reason.

``check``'s entry point (:mod:`harness.campaign.check`) calls :func:`open_check_drill` before
its stream begins (a port or profile problem exits 2 with nothing written), then yields what
:meth:`CheckDrill.run` yields for the scenarios' part: their events, the drill's, and the
scenarios the drill judges, judged.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.domain.stream import Live
from harness.domain.verdicts import Outcome, Promise
from harness.domain.words import counted, of
from harness.drill.beside import beside, count_provider_calls
from harness.drill.drills import NAMES
from harness.drill.engine import DrillResults, Engine, drilling
from harness.drill.findings import PROMISES
from harness.drill.summary import drill_events
from harness.scenarios.events import Check, ScenarioRun, Unknown, Violation
from harness.target.drill_profile import DrillProfile, load_drill
from harness.yamlsrc import load_yaml

CHECK_TRIALS = 3
#: a shipped scenario a jobs-only service cannot play → the drills and the promises that judge
#: it: only the promises that are one of the scenario's own rules (its checkers), so a broken
#: promise is attributed to the scenarios whose rule it is, never to every scenario the drill
#: judges. The promise for each checker: timeout_unknown_blocks → timeout_not_failure and
#: within_hedge; open_attempts_bounded → within_hedge; one_winner_per_job,
#: results_never_overwritten, late_result_discarded_recorded, cancelled_never_wins →
#: one_winner_per_job; completed_job_refuses_attempts → no_call_after_completion.
#: (billed_within_bound is no scenario's rule: the drill's own events report it.)
JUDGED_BY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "timeout_unknown": (("hang", "late"), ("timeout_not_failure", "within_hedge")),
    "timeout_while_still_running": (("hang", "double-click", "re-click"),
                                    ("timeout_not_failure", "within_hedge")),
    "out_of_order_completion": (("late",), ("one_winner_per_job",)),
    "late_result_after_completion": (("late",), ("one_winner_per_job",
                                                 "no_call_after_completion")),
    "cancel_then_late_result": (("late",), ("one_winner_per_job",)),
    "hedge_bound": (("hang", "late", "re-click"), ("within_hedge",)),
}


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
    #: the fakes count the scenarios' side effects (calls to the primaries)
    lent: bool = False

    def close(self) -> None:
        self.stack.close()

    def run(self, live: Live, scenarios: Iterator[Any],
            trials: int | None = None) -> Iterator[Any]:
        """The drills and the ``scenarios`` stream in one run (:func:`beside`: at the same
        time); the scenarios' side effects counted as calls to the primaries when the profile
        names no counter. Yields the scenarios' events, the drill's, then the scenarios the
        drill judges, judged (they wait until it has its results)."""
        self.trials = trials or CHECK_TRIALS
        fakes = ", ".join(f"{n} ({k}) at {u}" for n, k, u in self.engine.fakes)
        live.say(f"drills: {self.profile.name}'s providers served at {fakes}")
        if self.lent:
            live.say("side effects: the scenarios' handler runs, one per call to a primary "
                     "provider, counted by the drill's fakes (the profile names no counter)")
        held: list[Any] = []  # the scenarios the drill judges wait for its results

        def unheld() -> Iterator[Any]:
            for event in scenarios:
                if self.judges(event):
                    held.append(event)
                else:
                    yield event

        self.results = yield from beside(self.engine, unheld(), drills=list(NAMES),
                                         trials=self.trials)
        yield from drill_events(self.results, lambda name: _command(
            self.target, self.profile.path, (name,), self.trials))
        yield from (self.rejudge(e) for e in held)

    def judges(self, event: Any) -> bool:
        """Is ``event`` a "not applicable" run of a scenario the drill judges?"""
        return (isinstance(event, ScenarioRun) and event.verdict == "not_applicable"
                and event.scenario in JUDGED_BY)

    def rejudge(self, event: Any) -> Any:
        """A "not applicable" run of a scenario the drill judges, judged by the drill: one
        check per promise (the broken ones first), counts of intents."""
        if not self.judges(event) or self.results is None:
            return event
        drills, promises = JUDGED_BY[event.scenario]
        verdicts = [v for d in drills for v in self.results.verdicts.get(d, [])]
        checks = sorted((_check(p, verdicts) for p in promises),
                        key=lambda c: ("broken", "unknown", "held").index(c.verdict))
        broken = [c.name for c in checks if c.verdict == "broken"]
        unknown = [c for c in checks if c.verdict == "unknown"]
        bad = [v for v in verdicts if any(f.verdict == "broken" and f.promise in promises
                                          for f in v.findings)]
        each = f"{', '.join(drills)}, {counted(self.trials, 'trial')} each"
        verdict: Promise = "held"
        outcome: Outcome = "pass"
        if broken:
            verdict, outcome = "broken", "fail"
            reason = (f"judged by the drill ({each}): {' and '.join(broken)} broken in "
                      f"{of(len(bad), len(verdicts), 'intent')}")
        elif unknown:
            verdict, outcome = "unknown", "unknown"
            reason = (f"judged by the drill ({each}): {' and '.join(c.name for c in unknown)} "
                      "unknown")
        else:
            reason = (f"judged by the drill ({each}): {' and '.join(promises)} held in "
                      f"{counted(len(verdicts), 'intent')}")
        fix = next((u.fix for c in unknown for u in c.unknowns if u.fix), "")
        return replace(
            event, verdict=verdict, outcome=outcome, source="drill", reason=reason,
            fix=fix if not broken else "",
            replay_command=_command(self.target, self.profile.path, drills, self.trials),
            checks=tuple(checks))


def _check(promise: str, verdicts: list[Any]) -> Check:
    """One promise over the drill's intents: broken if an intent broke it, unknown if one
    could not judge it (or none did), else held."""
    findings = [f for v in verdicts for f in v.findings if f.promise == promise]
    # an intent the drill could not run at all (no provider call) is unknown for everything
    blind = [f for v in verdicts for f in v.findings
             if f.verdict == "unknown" and f.promise == "completed" and not v.evidence.calls]
    broken = [f for f in findings if f.verdict == "broken"]
    unknown = [f for f in findings if f.verdict == "unknown"] + blind
    held = [f for f in findings if f.verdict == "held"]
    verdict: Promise = "broken" if broken else "unknown" if unknown or not held else "held"
    if verdict == "unknown" and not unknown:
        unknown_list: tuple[Unknown, ...] = (
            Unknown("judged by the drill, which saw no evidence for it", ""),)
    else:
        unknown_list = tuple(Unknown(f.message, f.fix) for f in unknown[:1])
    return Check(name=promise, promise=f"{PROMISES[promise]} (judged by the drill)",
                 verdict=verdict,
                 violations=tuple(Violation(f.message, kind=f.promise) for f in broken[:3]),
                 unknowns=unknown_list if verdict == "unknown" else ())


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
    engine = stack.enter_context(drilling(profile, target=url, env=env))  # one round
    lent = scenarios_target is not None and count_provider_calls(scenarios_target, engine)
    return CheckDrill(profile, url, engine, stack, lent=lent)
