"""The search: run schedule after schedule until a promise breaks or the budget is spent.

``seeded`` (the default): schedule *n* of seed *S* draws its plan and its swarm weights from
``Random("S:n")``, so ``--seed S --schedule n`` reruns exactly that schedule. ``exhaustive``: the
smallest plan of each workload, every interleaving depth-first, until done or the budget ends.
``hypothesis``: Hypothesis draws the plan and every decision; a failure comes back already
shrunk.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.domain.words import counted
from harness.explore.choices import (
    HypothesisChoices,
    HypothesisDraw,
    PrefixChoices,
    SwarmChoices,
    next_prefix,
)
from harness.explore.controller import Runner, ScheduleRun
from harness.explore.evidence import Tally
from harness.explore.pct import PctChoices
from harness.explore.plan import Draw, Plan, RandomDraw, SmallestDraw
from harness.explore.workloads import WORKLOADS, build_plan

CHOICE_SOURCES = ("seeded", "pct", "exhaustive", "hypothesis")
PCT_FIRST_STEPS = 10  # PCT's k before the first schedule has shown how many steps there are
Build = Callable[[str, Draw, int], Plan]


@dataclass(frozen=True)
class SearchSettings:
    """What to explore and for how long (``budget`` schedules and/or ``time_limit`` seconds)."""

    workload: str = "all"
    clients: int = 3
    budget: int | None = 500
    time_limit: float | None = None
    seed: int = 0
    choices: str = "seeded"
    first: int = 0  # the first schedule number (seeded, pct)
    depth: int = 2  # PCT's bug depth d


@dataclass
class Progress:
    """Counters so far."""

    schedules: int = 0
    steps: int = 0
    violations: int = 0
    started: float = field(default_factory=time.perf_counter)
    unit: str = "schedules"  # "rounds" for --stress, which has no steps
    tally: Tally = field(default_factory=Tally)  # what the clean schedules were evidence of

    def count(self, outcome: ScheduleRun) -> None:
        """One more schedule: its steps, and (unless it broke a promise) its evidence."""
        self.schedules += 1
        self.steps += outcome.steps
        if outcome.violated:
            self.violations += 1
        else:
            self.tally.add(outcome)

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def line(self) -> str:
        elapsed = max(self.elapsed_s, 1e-9)
        if self.unit != "schedules":
            return (f"{self.schedules} {self.unit}, {counted(self.violations, 'violation')} "
                    f"({self.schedules / elapsed:.1f} {self.unit}/s, {elapsed:.1f} s)")
        return (f"{self.schedules} schedules, {self.steps} steps, "
                f"{counted(self.violations, 'violation')} "
                f"({self.schedules / elapsed:.1f} schedules/s, {self.steps / elapsed:.0f} "
                f"steps/s, {elapsed:.1f} s)")


@dataclass
class Found:
    """How the search ended."""

    outcome: ScheduleRun | None
    progress: Progress
    schedule: int | None = None  # the failing schedule's number (seeded) or index
    exhausted: bool = False  # exhaustive: every interleaving was tried
    shrunk_by_hypothesis: bool = False
    pct_steps: int = 0  # PCT: the k (steps per schedule) the last schedule was drawn for
    pct_clients: int = 0  # PCT: the most clients a schedule had


def _more(settings: SearchSettings, progress: Progress) -> bool:
    if settings.budget is not None and progress.schedules >= settings.budget:
        return False
    return settings.time_limit is None or progress.elapsed_s < settings.time_limit


def search(controller: Runner, settings: SearchSettings,
           report: Callable[[Progress], None] | None = None, *,
           build: Build = build_plan, workloads: list[str] | None = None) -> Found:
    """Explore until a violation, the budget or the time limit. ``build`` draws the plans
    (``workloads``: the names ``all`` covers, for exhaustive search)."""
    progress = Progress()
    tick = report or (lambda p: None)
    if settings.choices == "exhaustive":
        return _exhaustive(controller, settings, progress, tick, build,
                           workloads or list(WORKLOADS))
    if settings.choices == "hypothesis":
        return _hypothesis(controller, settings, progress, tick, build)
    number = settings.first
    steps, clients = PCT_FIRST_STEPS, 0
    while _more(settings, progress):
        rng = random.Random(f"{settings.seed}:{number}")
        plan = build(settings.workload, RandomDraw(rng), settings.clients)
        clients = max(clients, len(plan.racing_clients()))
        chooser = (PctChoices(rng, depth=settings.depth, steps=steps)
                   if settings.choices == "pct" else SwarmChoices(rng, plan))
        outcome = controller.run(plan, chooser)
        steps = max(steps if progress.schedules else 1, len(outcome.schedule))
        progress.count(outcome)
        if outcome.violated:
            tick(progress)
            return Found(outcome, progress, number, pct_steps=steps, pct_clients=clients)
        tick(progress)
        number += 1
    return Found(None, progress, pct_steps=steps, pct_clients=clients)


def _exhaustive(controller: Runner, settings: SearchSettings, progress: Progress,
                tick: Callable[[Progress], None], build: Build, workloads: list[str]) -> Found:
    names = workloads if settings.workload == "all" else [settings.workload]
    for name in names:
        plan = build(name, SmallestDraw(), settings.clients)
        prefix: list[int] | None = []
        while prefix is not None:
            if not _more(settings, progress):
                return Found(None, progress)
            choices = PrefixChoices(prefix)
            outcome = controller.run(plan, choices)
            progress.count(outcome)
            tick(progress)
            if outcome.violated:
                return Found(outcome, progress, progress.schedules - 1)
            prefix = next_prefix(choices.trail)
    return Found(None, progress, exhausted=True)


class _Violated(Exception):
    def __init__(self, outcome: ScheduleRun) -> None:
        super().__init__(", ".join(outcome.broken))
        self.outcome = outcome


def _hypothesis(controller: Runner, settings: SearchSettings, progress: Progress,
                tick: Callable[[Progress], None], build: Build) -> Found:
    from hypothesis import HealthCheck, Phase, Verbosity, given, seed  # optional extra: explore
    from hypothesis import settings as hypothesis_settings  # optional extra: explore
    from hypothesis import strategies as st  # optional extra: explore

    first_failure: list[int] = []

    @seed(settings.seed)
    @hypothesis_settings(database=None, max_examples=settings.budget or 500, deadline=None,
                         phases=[Phase.generate, Phase.shrink], verbosity=Verbosity.quiet,
                         suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                         print_blob=False)
    @given(st.data())
    def schedules(data: st.DataObject) -> None:
        if not first_failure and not _more(settings, progress):
            return  # the time limit: let Hypothesis run out of examples quickly
        plan = build(settings.workload, HypothesisDraw(data), settings.clients)
        outcome = controller.run(plan, HypothesisChoices(data))
        if not first_failure:  # after it, Hypothesis shrinks the failure: not exploring
            progress.count(outcome)
            tick(progress)
            if outcome.violated:
                first_failure.append(progress.schedules - 1)
        if outcome.violated:
            raise _Violated(outcome)

    try:
        schedules()
    except _Violated as violated:
        return Found(violated.outcome, progress, first_failure[0], shrunk_by_hypothesis=True)
    return Found(None, progress)
