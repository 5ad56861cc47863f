"""Certification records and gate standings as the certification engine's events
(:mod:`harness.contracts.events`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from harness.contracts.drift import drift_items
from harness.contracts.events import (
    CertCheck,
    Certification,
    Drift,
    GateProblem,
    GateVerdict,
    Sampling,
    Statistic,
)
from harness.domain.clock import rfc3339
from harness.domain.verdicts import eligibility_outcome

if TYPE_CHECKING:
    from harness.contracts.records import CertificationRecord
    from harness.contracts.standing import Standing


def _rate(name: str, stats: Any) -> Statistic:
    """A check's rate verdict (harness.contracts.stats.RateVerdict) as a statistic."""
    return Statistic(name, float(stats.rate), float(stats.lower), float(stats.upper),
                     float(stats.confidence), int(stats.samples), float(stats.threshold),
                     str(stats.rule), str(stats.decision), str(stats.describe()))


def _pass_k(name: str, figure: Any) -> Statistic | None:
    if not isinstance(figure, Mapping) or "rate" not in figure:
        return None
    k, inputs, all_pass = figure.get("k"), figure.get("inputs"), figure.get("all_pass")
    return Statistic(f"{name} pass^{k}", float(figure["rate"]), n=inputs,
                     text=f"{all_pass} of {inputs} inputs passed "
                     + (f"all {k} samples" if k != 1 else "their one sample"))


def _drift(record: Any) -> tuple[Drift, ...]:
    return tuple(Drift(str(i["input"]), str(i["before"]) or "—", str(i["after"]) or "—",
                       str(i["change"]), str(i["text"]))
                 for i in (drift_items(record) if getattr(record, "drift", None) else ()))


def certification(record: CertificationRecord, failover: str = "", *, fix: str = "",
                  gated: bool | None = None) -> Certification:
    """A certification record as an event. ``gated``: does this pair's verdict decide the run
    (``certify`` and ``check``: an auto link)? Default: it does unless the link is manual."""
    p50 = p95 = None
    checks = []
    statistics = []
    for check in record.checks:
        figure = check.figures.get("latency_p50_s")
        if figure is not None and p50 is None:
            p50 = float(figure) * 1000
        figure = check.figures.get("latency_p95_s")
        if figure is not None and p95 is None:
            p95 = float(figure) * 1000
        stats = [_rate(check.name, check.stats)] if getattr(check, "stats", None) else []
        pass_k = _pass_k(check.name, check.figures.get("pass_k"))
        stats += [pass_k] if pass_k else []
        statistics += stats
        checks.append(CertCheck(
            check.name, check.decision, check.summary,
            tuple(check.evidence),
            check.evidence_total, tuple(stats),
            {k: v for k, v in check.figures.items() if isinstance(v, int | float | str | bool)},
        ))
    gated = failover != "manual" if gated is None else gated
    outcome = eligibility_outcome(record.verdict, gated)
    sampling = getattr(record, "sampling", None)
    drift = getattr(record, "drift", None) or {}
    return Certification(
        provider=record.provider, contract=record.contract, verdict=record.verdict,
        outcome=outcome, model=record.model, kind=record.kind, mode=record.mode,
        provenance=str(getattr(record, "provenance", "") or ""), failover=failover,
        contract_version=record.contract_version, config_hash=record.config_hash,
        contract_hash=record.contract_hash, certified_at=_time(record.certified_at),
        expires_at=_time(record.expires_at), checks=tuple(checks),
        statistics=tuple(statistics),
        sampling=Sampling(sampling.rule, sampling.confidence, sampling.k, sampling.calls,
                          sampling.rounds, sampling.adaptive) if sampling else None,
        drift=_drift(record), drift_since=str(drift.get("since", "")),
        previous_verdict=str(drift.get("previous_verdict", "") or ""),
        why=record.why(), fix=fix if outcome in ("fail", "unknown") else "",
        latency_ms_p50=p50, latency_ms_p95=p95,
    )


def _time(value: Any) -> str:
    return rfc3339(value) if value is not None else ""


def gate_verdict(standings: Iterable[Standing], *, lock_file: str = "",
                 providers_file: str = "") -> GateVerdict:
    standings = list(standings)
    problems = tuple(
        GateProblem(s.provider, s.contract, str(s.state), s.why, s.fix)
        for s in standings if not s.eligible
    )
    failed = any(p.state == "failed" for p in problems)
    verdict = "fail" if failed else "unknown" if problems else "pass"
    fakes = tuple(f"{s.provider!r} for {s.contract!r}: {s.provenance}, not evidence about a model"
                  for s in standings if s.eligible and s.provenance)
    return GateVerdict(verdict, verdict, len(standings), problems,  # type: ignore[arg-type]
                       lock_file=lock_file, providers_file=providers_file, fakes=fakes)
