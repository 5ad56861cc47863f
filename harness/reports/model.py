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

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from harness.contracts.events import (
    CertCheck,
    Certification,
    Drift,
    Evidence,
    GateProblem,
    GateVerdict,
    Sampling,
    Statistic,
)
from harness.domain.published import engine_words, published
from harness.domain.verdicts import SCENARIO_WORD, Outcome, Verdict
from harness.drill.events import DrilledIntent, DrillRun
from harness.explore.events import ExploreResult, ScheduleStep
from harness.scenarios.events import (
    Check,
    DetectionMatrix,
    FirstFailure,
    Lane,
    LoserCount,
    MatrixCell,
    PatternSummary,
    Rate,
    ReplayComparison,
    ScenarioRun,
    Timeline,
    TimelineEvent,
    TrialFailure,
    TrialSeries,
    Unknown,
    UnknownCount,
    UnrunStep,
    Violation,
)

__all__ = [
    "BY_TYPE",
    "EVENT_TYPES",
    "EXIT_CODES",
    "SCHEMA",
    "Case",
    "CertCheck",
    "Certification",
    "Check",
    "DetectionMatrix",
    "Drift",
    "DrillRun",
    "DrilledIntent",
    "Event",
    "Evidence",
    "ExploreResult",
    "FirstFailure",
    "GateProblem",
    "GateVerdict",
    "Lane",
    "LoserCount",
    "MatrixCell",
    "Outcome",
    "PatternSummary",
    "Rate",
    "ReplayComparison",
    "Results",
    "Sampling",
    "ScenarioRun",
    "ScheduleStep",
    "ShardInfo",
    "Statistic",
    "Timeline",
    "TimelineEvent",
    "TrialFailure",
    "TrialSeries",
    "Unknown",
    "UnknownCount",
    "UnrunStep",
    "Verdict",
    "Violation",
    "event_json",
    "run_verdict",
]


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


SCHEMA = "failover-harness/results@2"
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "unknown": 3}


Event = (ScenarioRun | TrialSeries | DetectionMatrix | ExploreResult | Certification
         | GateVerdict | ReplayComparison | Case | DrillRun)
EVENT_TYPES: tuple[type[Any], ...] = (ScenarioRun, TrialSeries, DetectionMatrix, ExploreResult,
                                      Certification, GateVerdict, ReplayComparison, Case,
                                      DrillRun)
BY_TYPE: dict[str, type[Any]] = {cls.TYPE: cls for cls in EVENT_TYPES}


def event_json(event: Event) -> dict[str, Any]:
    """One event as JSON: ``{"type": …, **fields}``, its verdicts in the published words
    (:mod:`harness.domain.published`)."""
    return {"type": event.TYPE, **published(event)}


# -- the run ------------------------------------------------------------------------------------
def run_verdict(events: tuple[Event, ...] | list[Event]) -> Verdict:
    """The worst outcome: fail, else unknown, else pass (skips count for nothing)."""
    outcomes = {e.outcome for e in events}
    return "fail" if "fail" in outcomes else "unknown" if "unknown" in outcomes else "pass"


@dataclass(frozen=True)
class ShardInfo:
    """results@2's optional ``shard``: this document is shard ``index`` of ``total`` of one run
    (``--shard K/N``). ``failover-harness merge`` puts the shards of a run together: their
    ``job`` and ``run_digest`` (the harness version, the settings, the files that decide the
    verdicts: ``inputs``, each a digest) must be equal. ``order`` is the canonical order of the
    run's units (``scenario:<name>``, ``drill:<name>``); ``evidence`` is aligned with
    ``events``: what the merge judges again (per-trial records, a search's tally), or null."""

    index: int
    total: int
    job: str
    run_digest: str
    inputs: dict[str, str]
    order: tuple[str, ...] = ()
    evidence: tuple[dict[str, Any] | None, ...] = ()


_ADAPTERS: dict[type[Any], Any] = {}


def _adapter(kind: type[Any]) -> Any:
    """The pydantic validator of ``kind``, built once: building one costs far more than using
    it (``merge`` reads a results.json per shard: 100 of them)."""
    from pydantic import TypeAdapter

    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


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
    shard: ShardInfo | None = None  # a shard of a run (--shard K/N); absent: a whole run

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": SCHEMA}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "events":
                data["events"] = [event_json(e) for e in value]
            elif f.name == "shard":
                if value is not None:
                    data["shard"] = asdict(value)
            else:
                data[f.name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Results:
        """Read a ``results.json`` back (validate it first: :func:`schema.validate_results`)."""
        events = tuple(
            _adapter(BY_TYPE[e["type"]]).validate_python(engine_words(
                BY_TYPE[e["type"]], {k: v for k, v in e.items() if k != "type"}))
            for e in data.get("events", [])
        )
        header = {f.name: data[f.name] for f in fields(cls)
                  if f.name in data and f.name != "events"}
        for name in ("targets", "notes"):
            header[name] = tuple(header.get(name, ()))
        if header.get("shard") is not None:
            header["shard"] = _adapter(ShardInfo).validate_python(header["shard"])
        return cls(**header, events=events)

    def of(self, kind: type[Any]) -> list[Any]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def counts(self) -> dict[str, int]:
        """Scenario runs and trial series by verdict, in the published words (``passed``)."""
        out: dict[str, int] = {}
        for e in self.events:
            if isinstance(e, ScenarioRun | TrialSeries):
                word = SCENARIO_WORD[e.verdict]
                out[word] = out.get(word, 0) + 1
        return out
