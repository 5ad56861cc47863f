"""The one result model of a run, which every rendering (JSON, Markdown, JUnit, HTML) reads.

Plain frozen dataclasses, filled by the command that ran the work; nothing here imports the
layers that produce results. ``RunReport.to_json()`` is ``results.json``, whose schema is
versioned by :data:`SCHEMA` and documented in docs/results.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SCHEMA = "failover-harness/results@1"

Verdict = Literal["pass", "fail", "unknown"]
ScenarioVerdict = Literal["passed", "failed", "unknown", "not_applicable"]


@dataclass(frozen=True)
class CheckReport:
    """One checker's verdict on one scenario run."""

    name: str
    promise: str
    verdict: Literal["valid", "invalid", "unknown"]
    violations: tuple[str, ...] = ()
    ops: tuple[int, ...] = ()


@dataclass(frozen=True)
class TimelineEvent:
    """A mark on a lane: ``kind`` is started, dispatched, timed_out, result, failed, cancelled,
    won, lost (or any op name); ``t`` is virtual seconds from the start."""

    t: float
    kind: str
    label: str = ""


@dataclass(frozen=True)
class Lane:
    """One attempt (or one client) over time."""

    label: str
    provider: str = ""
    events: tuple[TimelineEvent, ...] = ()
    outcome: str | None = None  # won | lost | failed | cancelled | unknown | None
    claim_version: int | None = None


@dataclass(frozen=True)
class Timeline:
    duration: float
    lanes: tuple[Lane, ...] = ()


@dataclass(frozen=True)
class ScenarioReport:
    """One scenario run against one target."""

    name: str
    target: str
    verdict: ScenarioVerdict
    description: str = ""
    checks: tuple[CheckReport, ...] = ()
    timeline: Timeline | None = None
    run_dir: str | None = None
    replay_command: str | None = None
    reason: str = ""  # why not applicable / unknown
    wall_s: float = 0.0
    virtual_s: float = 0.0


@dataclass(frozen=True)
class MatrixCell:
    scenario: str
    target: str
    verdict: ScenarioVerdict


@dataclass(frozen=True)
class Matrix:
    """Detection matrix: scenarios × targets (the reference store and each mutant)."""

    scenarios: tuple[str, ...]
    targets: tuple[str, ...]
    cells: tuple[MatrixCell, ...]
    reference: str = "reference"

    def cell(self, scenario: str, target: str) -> ScenarioVerdict | None:
        for c in self.cells:
            if c.scenario == scenario and c.target == target:
                return c.verdict
        return None

    def caught(self, target: str) -> bool:
        return any(c.target == target and c.verdict == "failed" for c in self.cells)


@dataclass(frozen=True)
class Evidence:
    input_id: str
    reason: str
    excerpt: str = ""


@dataclass(frozen=True)
class CertCheck:
    name: str
    verdict: Literal["pass", "fail", "skipped"]
    summary: str = ""
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class CertReport:
    """One provider's certification for one contract."""

    provider: str
    contract: str
    verdict: Literal["eligible", "ineligible", "undecided"]
    model: str = ""
    kind: str = ""
    mode: str = "live"
    failover: str = ""
    checks: tuple[CertCheck, ...] = ()
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None


@dataclass(frozen=True)
class GateProblem:
    provider: str
    contract: str
    state: str  # failed | missing | stale | expired
    why: str
    fix: str


@dataclass(frozen=True)
class GateReport:
    verdict: Verdict
    exit_code: int
    problems: tuple[GateProblem, ...] = ()
    links_checked: int = 0


@dataclass(frozen=True)
class RunReport:
    """Everything one run found."""

    verdict: Verdict
    exit_code: int
    started_at: str
    finished_at: str
    harness_version: str
    command: str = "check"
    store: str = ""
    scenarios: tuple[ScenarioReport, ...] = ()
    matrix: Matrix | None = None
    certifications: tuple[CertReport, ...] = ()
    gate: GateReport | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema": SCHEMA, **data}

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.scenarios:
            out[s.verdict] = out.get(s.verdict, 0) + 1
        return out
