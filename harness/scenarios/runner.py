"""Play a scenario against a target: steps become timed events, events become history ops.

The scheduler owns virtual time; every target call is recorded as invoke → ok | fail | info.
A concurrent group of N identical requests really runs on N threads released together by a
barrier — and, with an arrival pattern other than ``burst``, spaced in real time after it
(:mod:`harness.scenarios.arrivals`); its ops are written in a canonical order (all invokes, then
the completions sorted), because identical requests are interchangeable and the history must not
depend on which thread the OS ran first. A target with a side-effect counter is read before and
after the run (``side_effects`` ops). Checkers then judge the history
(:mod:`harness.scenarios.checkers`), each requiring the evidence it judges.

No verdict without evidence: a step that could not run (the job or attempt it names was never
bound, because the step that should have made it was refused) and an expected reply that never
came are recorded in ``RunResult.unrun`` with the reason and the likely fix; such a run is at
best ``unknown``, never ``passed``.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from harness.domain.clock import EPOCH, ManualClock, rfc3339
from harness.domain.verdicts import Promise
from harness.scenarios import arrivals
from harness.scenarios.checkers import EVIDENCE, CheckResult, run_checkers, verdict_of
from harness.scenarios.history import History, Op
from harness.scenarios.model import (
    Scenario,
)
from harness.scenarios.play import Play
from harness.scenarios.scheduler import (
    ChoiceSource,
    RecordedChoices,
    Scheduler,
    SeededChoices,
)
from harness.scenarios.targets.base import Target


@dataclass
class RunResult:
    """One scenario run: the verdict, the checks, the history and the schedule."""

    scenario: Scenario
    target: str
    target_kind: str
    seed: int
    run_id: str
    status: Promise
    reason: str | None = None
    checks: list[CheckResult] = field(default_factory=list)
    history: list[Op] = field(default_factory=list)
    schedule: list[dict[str, Any]] = field(default_factory=list)
    virtual_seconds: float = 0.0
    elapsed_s: float = 0.0
    folder: Any = None  # the run folder, once written
    arrival: str | None = None  # the arrival pattern of its concurrent groups (None: no group)
    arrivals: list[dict[str, Any]] = field(default_factory=list)  # each group's plan
    #: scripted steps (or expected replies) that did not happen: ``{"step": n (1-based), "line",
    #: "kind", "why", "fix"}``; any makes the run at best unknown
    unrun: list[dict[str, Any]] = field(default_factory=list)
    #: what the user can do about an unknown run (the first unrun step's fix), else None
    fix: str | None = None
    #: the scenario's oracle-rule warnings (absolute versions), when aimed at an HTTP target
    warnings: tuple[str, ...] = ()
    #: a trial of a series: ``{"trial": k (1-based), "of": n, "pattern": p, "broke": m}`` — m
    #: of the pattern's n trials broke a promise (a replay of this trial says so when it passes)
    trial: dict[str, Any] | None = None


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
    unready = target.unready(scenario)
    if unready is not None:  # runnable, but not judgeable as configured: never a pass
        base.status, (base.reason, base.fix) = "unknown", unready
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
        play = Play(scenario, session, scheduler, history, run_id)
        play.target, play.seed, play.pattern = target, seed, base.arrival or "burst"
        play.run()
    unshown = target.unmapped("create") & target.unmapped("read")
    blind = {name for name in scenario.checkers
             if (ev := EVIDENCE.get(name)) is not None and set(ev.fields) & unshown}
    checks = run_checkers(scenario.checkers, history.ops, terms=target.terms(),
                          require_evidence=True, optional=scenario.optional_checkers | blind)
    base.status = verdict_of(checks)
    base.unrun = play.unrun + play.missing_replies()
    if base.unrun:
        if base.status == "held":
            base.status = "unknown"
        if base.status == "unknown":
            base.reason = "; ".join(u["why"] for u in base.unrun[:3]) + (
                f" (and {len(base.unrun) - 3} more)" if len(base.unrun) > 3 else "")
            base.fix = base.unrun[0]["fix"]
    if target.kind == "http":
        base.warnings = scenario.warnings
    base.checks, base.history, base.schedule = checks, history.ops, scheduler.schedule
    base.arrivals = play.plans
    base.virtual_seconds = scheduler.now
    base.elapsed_s = time.perf_counter() - started
    return base
