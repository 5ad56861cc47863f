"""The scenario engine's events (results@2): scenario runs, trial series, the detection matrix
and replay comparisons, with the pieces other engines' events share (checks, violations,
unknowns, timelines). Pure data: :mod:`harness.scenarios.emit` makes them from the engine's
results; :mod:`harness.reports` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from harness.domain.verdicts import CHECK_WORD, MATRIX_CELL, SCENARIO_WORD, Outcome, Promise


# -- pieces shared by several events ------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    """One broken promise: what happened, the history ops that show it (as indices and as the
    lines a person reads), and the way it broke (``kind``) when a checker has several."""

    message: str
    kind: str = ""
    ops: tuple[int, ...] = ()
    history: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unknown:
    """Why a verdict is unknown (a step did not run, evidence is missing) and the likely fix."""

    reason: str
    fix: str = ""


@dataclass(frozen=True)
class Check:
    """One checker's verdict on one history (its promise in the target's terms); ``needs`` is
    the evidence the checker must see to judge, ``seen`` how much of it the history held."""

    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": CHECK_WORD}
    name: str
    promise: str
    verdict: Promise
    violations: tuple[Violation, ...] = ()
    unknowns: tuple[Unknown, ...] = ()
    fixes: tuple[str, ...] = ()  # what to do about the unknowns
    needs: str = ""
    seen: int | None = None


@dataclass(frozen=True)
class UnrunStep:
    """A scripted step that did not happen (so the run is at best unknown): why, and the fix."""

    step: int
    why: str
    fix: str = ""
    line: int | None = None
    kind: str = ""


@dataclass(frozen=True)
class TimelineEvent:
    """A mark on a lane: ``kind`` is started, dispatched, timed_out, result, failed, cancelled,
    won, lost, created, replayed, refused, unknown (or any op name); ``t`` is seconds from the
    start (virtual for scenarios, steps for explore)."""

    t: float
    kind: str
    label: str = ""


@dataclass(frozen=True)
class Lane:
    """One attempt, client or session over time."""

    label: str
    provider: str = ""
    events: tuple[TimelineEvent, ...] = ()
    outcome: str | None = None  # won | lost | failed | cancelled | unknown | None
    claim_version: int | None = None


@dataclass(frozen=True)
class Timeline:
    duration: float
    lanes: tuple[Lane, ...] = ()
    unit: Literal["s", "step"] = "s"


# -- events -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScenarioRun:
    """One scenario run against one target."""

    TYPE: ClassVar[str] = "scenario_run"
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": SCENARIO_WORD}
    scenario: str
    target: str
    verdict: Promise
    outcome: Outcome
    seed: int = 0
    source: str = ""
    description: str = ""
    history_digest: str = ""  # sha256 of the history lines: equal digests, equal histories
    ops: int = 0
    checks: tuple[Check, ...] = ()
    timeline: Timeline | None = None
    run_dir: str | None = None
    replay_command: str | None = None
    reason: str = ""  # why not applicable / unknown
    fix: str = ""  # the likely fix for an unknown
    unrun: tuple[UnrunStep, ...] = ()
    warnings: tuple[str, ...] = ()  # the scenario's oracle-rule warnings for this target
    arrival: str | None = None
    wall_s: float = 0.0
    virtual_s: float = 0.0


@dataclass(frozen=True)
class LoserCount:
    """One bar of the losers' histogram: how many concurrent duplicates got this answer."""

    answer: str
    count: int
    allowed: bool | None = None  # None: neither (e.g. no answer)


@dataclass(frozen=True)
class PatternSummary:
    """One arrival pattern of a trial series."""

    pattern: str
    trials: int
    violated: int
    losers: tuple[LoserCount, ...] = ()
    busy: tuple[LoserCount, ...] = ()  # busy answers (in flight, locked) for copies never run


@dataclass(frozen=True)
class Rate:
    pattern: str
    failed: int
    trials: int
    text: str  # "3 of 20 trials made a second job"


@dataclass(frozen=True)
class FirstFailure:
    """The first trial that showed a failure: its violations, timeline and how to rerun it."""

    trial: int
    seed: int
    pattern: str | None = None
    violations: tuple[Violation, ...] = ()
    timeline: Timeline | None = None
    run_dir: str | None = None
    replay_command: str | None = None
    measure_command: str | None = None


@dataclass(frozen=True)
class TrialFailure:
    """One way a promise broke across the trials (``checker`` or ``checker:kind``)."""

    id: str
    checker: str
    title: str
    promise: str
    kind: str = ""
    rates: tuple[Rate, ...] = ()
    first: FirstFailure | None = None


@dataclass(frozen=True)
class UnknownCount:
    """Why some trials' verdicts were unknown, in how many, and the likely fix."""

    reason: str
    count: int
    checker: str = ""
    fix: str = ""
    first: FirstFailure | None = None  # the first trial that showed it: evidence, replay


@dataclass(frozen=True)
class TrialSeries:
    """A scenario run N times per arrival pattern: detection rates, loser histograms, and the
    first failing trial of each failure with its replay."""

    TYPE: ClassVar[str] = "trial_series"
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": SCENARIO_WORD}
    scenario: str
    target: str
    verdict: Promise
    outcome: Outcome
    seed: int = 0
    trials: int = 1
    source: str = ""
    description: str = ""
    checkers: tuple[str, ...] = ()
    promises: tuple[str, ...] = ()
    patterns: tuple[PatternSummary, ...] = ()
    failures: tuple[TrialFailure, ...] = ()
    unknowns: tuple[UnknownCount, ...] = ()
    fixes: tuple[str, ...] = ()  # what to do about the unknowns
    warnings: tuple[str, ...] = ()  # the scenario's oracle-rule warnings for this target
    reason: str = ""
    fix: str = ""
    wall_s: float = 0.0


@dataclass(frozen=True)
class MatrixCell:
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": SCENARIO_WORD}
    scenario: str
    target: str
    verdict: Promise


@dataclass(frozen=True)
class DetectionMatrix:
    """Scenarios × targets (the reference store and each mutant): every mutant must be caught,
    the reference by none."""

    TYPE: ClassVar[str] = "detection_matrix"
    scenarios: tuple[str, ...]
    targets: tuple[str, ...]
    cells: tuple[MatrixCell, ...]
    outcome: Outcome
    reference: str = "reference"
    problems: tuple[str, ...] = ()
    wall_s: float = 0.0

    def cell(self, scenario: str, target: str) -> Promise | None:
        for c in self.cells:
            if c.scenario == scenario and c.target == target:
                return c.verdict
        return None

    @property
    def shard_part(self) -> bool:
        """A shard's cells only (``--shard K/N``, outcome ``skip``): whether each mutant is
        caught is judged when the shards are merged."""
        return self.outcome == "skip"

    def caught(self, target: str) -> bool:
        return any(c.target == target and c.verdict == "broken" for c in self.cells)

    def table(self) -> str:
        """The matrix as a plain-text table: scenarios down, targets across (the one text
        rendering of it)."""
        width = max((len(s) for s in self.scenarios), default=0)
        cols = [max(len(target), 7) for target in self.targets]
        lines = [" " * width + "  " + "  ".join(
            t.ljust(w) for t, w in zip(self.targets, cols, strict=True))]
        for scenario in self.scenarios:
            cells = [MATRIX_CELL[self.cell(scenario, target) or "not_applicable"].ljust(w)
                     for target, w in zip(self.targets, cols, strict=True)]
            lines.append(scenario.ljust(width) + "  " + "  ".join(cells))
        return "\n".join(line.rstrip() for line in lines)


@dataclass(frozen=True)
class ReplayComparison:
    """``replay``: was the recorded history (or schedule) reproduced, and if not, where not."""

    TYPE: ClassVar[str] = "replay"
    source: str
    target: str
    identical: bool | None  # None: nothing recorded to compare with
    outcome: Outcome
    compared: str = "history"  # what was compared: history | schedule | schedule and history
    completed: bool = True  # False: the replay could not follow the recording to the end
    divergence: str = ""
    note: str = ""
    ops: int = 0
    events: int = 0
