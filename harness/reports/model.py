"""The one result model (``results@2``): a run is a header and a stream of typed events.

Every command that judges emits events (a scenario run, a trial series, the detection matrix,
an explore result, a certification record, a gate verdict, a replay comparison, or a generic
case); handlers consume them (:mod:`harness.reports.session`): the live CLI output, and at the
end ``results.json``, ``junit.xml``, ``summary.md`` and ``index.html`` rendered from the same
:class:`Results`. Plain frozen dataclasses: nothing here imports the layers that produce
results. The JSON Schema is derived from these classes (:mod:`harness.reports.schema`).

Every event carries ``outcome`` — what it means for the run: ``pass``, ``fail`` (exit 1),
``unknown`` (exit 3 unless something failed) or ``skip`` (not applicable, or informative only).
The run's verdict and exit code are the worst outcome (:func:`run_verdict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

SCHEMA = "failover-harness/results@2"

Outcome = Literal["pass", "fail", "unknown", "skip"]
Verdict = Literal["pass", "fail", "unknown"]
ScenarioVerdict = Literal["passed", "failed", "unknown", "not_applicable"]
CheckVerdict = Literal["valid", "invalid", "unknown", "not_applicable"]

EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "unknown": 3}


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

    name: str
    promise: str
    verdict: CheckVerdict
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
    scenario: str
    target: str
    verdict: ScenarioVerdict
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


@dataclass(frozen=True)
class TrialSeries:
    """A scenario run N times per arrival pattern: detection rates, loser histograms, and the
    first failing trial of each failure with its replay."""

    TYPE: ClassVar[str] = "trial_series"
    scenario: str
    target: str
    verdict: ScenarioVerdict
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
    scenario: str
    target: str
    verdict: ScenarioVerdict


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

    def cell(self, scenario: str, target: str) -> ScenarioVerdict | None:
        for c in self.cells:
            if c.scenario == scenario and c.target == target:
                return c.verdict
        return None

    def caught(self, target: str) -> bool:
        return any(c.target == target and c.verdict == "failed" for c in self.cells)


@dataclass(frozen=True)
class ScheduleStep:
    """One step of an explored interleaving: a statement a client ran, or a timer."""

    n: int
    client: str
    operation: str = ""
    statement: str = ""
    kind: Literal["statement", "timer"] = "statement"
    waited: bool = False


@dataclass(frozen=True)
class ExploreResult:
    """What ``explore`` found: schedules tried, the (shrunk) failing schedule, the repro folder
    and the command that replays it."""

    TYPE: ClassVar[str] = "explore_result"
    target: str
    workload: str
    verdict: Literal["passed", "failed", "unknown"]
    outcome: Outcome
    mode: Literal["search", "stress", "replay"] = "search"
    seed: int = 0
    choices: str = "seeded"
    schedules_tried: int = 0
    steps_tried: int = 0
    exhausted: bool = False
    stress: bool = False
    found_at: int | None = None  # the schedule number of the failure
    checks: tuple[Check, ...] = ()
    schedule: tuple[ScheduleStep, ...] = ()
    original_steps: int | None = None
    shrunk_steps: int | None = None
    timers: int = 0
    ops: int = 0
    story: tuple[str, ...] = ()  # who won, what was lost
    repro_dir: str | None = None
    replay_command: str | None = None
    replayed_identical: bool | None = None
    timeline: Timeline | None = None
    note: str = ""
    wall_s: float = 0.0


@dataclass(frozen=True)
class Evidence:
    input_id: str
    reason: str
    excerpt: str = ""
    sample: int | None = None


@dataclass(frozen=True)
class Statistic:
    """A statistical figure with its bounds: a check's pass rate judged against its threshold
    (the rule, the confidence, how many more samples would decide), or pass^k."""

    name: str
    value: float
    lower: float | None = None
    upper: float | None = None
    confidence: float | None = None
    n: int | None = None
    threshold: float | None = None
    rule: str = ""
    decision: str = ""
    text: str = ""


@dataclass(frozen=True)
class Sampling:
    """How a certification gathered its evidence."""

    rule: str
    confidence: float
    k: int  # samples per golden input
    calls: int
    rounds: int = 1
    adaptive: bool = False


@dataclass(frozen=True)
class Drift:
    """A change since the previous certification in the lock file (per golden input)."""

    field: str  # the golden input (or the setting) that changed
    previous: str
    current: str
    change: str = ""  # worse | better | added | removed
    text: str = ""


@dataclass(frozen=True)
class CertCheck:
    name: str
    verdict: Literal["pass", "fail", "undecided", "skipped"]
    summary: str = ""
    evidence: tuple[Evidence, ...] = ()
    evidence_total: int = 0
    statistics: tuple[Statistic, ...] = ()
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Certification:
    """One provider's certification record for one contract, with the evidence behind it."""

    TYPE: ClassVar[str] = "certification"
    provider: str
    contract: str
    verdict: Literal["eligible", "ineligible", "undecided"]
    outcome: Outcome
    model: str = ""
    kind: str = ""
    mode: str = "live"
    provenance: str = ""  # e.g. "fake provider (answers from the golden file)": always shown
    failover: str = ""  # the chain link's failover: auto | manual | "" (not in a chain)
    contract_version: str = ""
    config_hash: str = ""
    contract_hash: str = ""
    certified_at: str = ""
    expires_at: str = ""
    checks: tuple[CertCheck, ...] = ()
    statistics: tuple[Statistic, ...] = ()
    sampling: Sampling | None = None
    drift: tuple[Drift, ...] = ()
    drift_since: str = ""
    previous_verdict: str = ""
    why: str = ""
    fix: str = ""
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None


@dataclass(frozen=True)
class GateProblem:
    provider: str
    contract: str
    state: str  # failed | missing | stale | expired | undecided
    why: str
    fix: str


@dataclass(frozen=True)
class GateVerdict:
    """The gate: may every auto-failover link be reached?"""

    TYPE: ClassVar[str] = "gate"
    verdict: Verdict
    outcome: Outcome
    links_checked: int = 0
    problems: tuple[GateProblem, ...] = ()
    lock_file: str = ""
    providers_file: str = ""


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


@dataclass(frozen=True)
class Case:
    """A generic judged case, for commands without an event type of their own: one JUnit
    testcase, one row in the summaries."""

    TYPE: ClassVar[str] = "case"
    suite: str
    name: str
    outcome: Outcome
    message: str = ""
    details: tuple[str, ...] = ()
    command: str = ""
    wall_s: float = 0.0


Event = (ScenarioRun | TrialSeries | DetectionMatrix | ExploreResult | Certification
         | GateVerdict | ReplayComparison | Case)
EVENT_TYPES: tuple[type[Any], ...] = (ScenarioRun, TrialSeries, DetectionMatrix, ExploreResult,
                                      Certification, GateVerdict, ReplayComparison, Case)
BY_TYPE: dict[str, type[Any]] = {cls.TYPE: cls for cls in EVENT_TYPES}


def event_json(event: Event) -> dict[str, Any]:
    """One event as JSON: ``{"type": …, **fields}``."""
    return {"type": event.TYPE, **asdict(event)}


# -- the run ------------------------------------------------------------------------------------
def run_verdict(events: tuple[Event, ...] | list[Event]) -> Verdict:
    """The worst outcome: fail, else unknown, else pass (skips count for nothing)."""
    outcomes = {e.outcome for e in events}
    return "fail" if "fail" in outcomes else "unknown" if "unknown" in outcomes else "pass"


@dataclass(frozen=True)
class Results:
    """Everything one command found: the header and its events, in the order they came."""

    command: str
    verdict: Verdict
    exit_code: int
    started_at: str
    finished_at: str
    harness_version: str
    invocation: str = ""  # the command line, credentials removed
    targets: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": SCHEMA}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "events":
                data["events"] = [event_json(e) for e in value]
            else:
                data[f.name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Results:
        """Read a ``results.json`` back (validate it first: :func:`schema.validate_results`)."""
        from pydantic import TypeAdapter

        events = tuple(
            TypeAdapter(BY_TYPE[e["type"]]).validate_python(
                {k: v for k, v in e.items() if k != "type"})
            for e in data.get("events", [])
        )
        header = {f.name: data[f.name] for f in fields(cls)
                  if f.name in data and f.name != "events"}
        for name in ("targets", "notes"):
            header[name] = tuple(header.get(name, ()))
        return cls(**header, events=events)

    def of(self, kind: type[Any]) -> list[Any]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def counts(self) -> dict[str, int]:
        """Scenario runs and trial series by verdict."""
        out: dict[str, int] = {}
        for e in self.events:
            if isinstance(e, ScenarioRun | TrialSeries):
                out[e.verdict] = out.get(e.verdict, 0) + 1
        return out
