"""The certification engine's events (results@2): a provider's verdict for a contract with its
evidence, bounds, sampling and drift; the gate's verdict on the auto-failover links. Pure data:
:mod:`harness.contracts.emit` makes them from records and standings; :mod:`harness.reports`
renders them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from harness.domain.verdicts import DECISION_WORD, Eligibility, Outcome, Promise, Verdict


@dataclass(frozen=True, slots=True)
class Evidence:
    """One observation behind a check's result: the golden input, why, an excerpt, the sample
    (the one type for it: the certification record keeps it, the event shows it)."""

    input_id: str
    reason: str
    excerpt: str = ""
    sample: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input_id, "reason": self.reason}
        if self.sample is not None:
            out["sample"] = self.sample
        if self.excerpt:
            out["excerpt"] = self.excerpt
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(data["input"], data["reason"], data.get("excerpt", ""), data.get("sample"))


@dataclass(frozen=True)
class Statistic:
    """A statistical figure with its bounds: a check's pass rate judged against its threshold
    (the rule, the confidence, how many more samples would decide), or pass^k."""

    # decision: the rate's promise (held, broken, unknown; published pass, fail, undecided),
    # or "" for a figure that decides nothing
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"decision": DECISION_WORD}

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
    # its rule held (published "pass"), was broken ("fail"), is unknown ("undecided") or was
    # not run ("skipped"); no docstring: it would change the published schema's description
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": DECISION_WORD}
    name: str
    verdict: Promise
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
    verdict: Eligibility
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
    # certified links whose provider is a fake ("'x' for 'y': fake provider (answers from the
    # golden file)"): not evidence about a model, said in every rendering
    fakes: tuple[str, ...] = ()
