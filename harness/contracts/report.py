"""The certification report: Markdown for people, JSON for machines, from the same records.

(The reports layer renders richer formats from these records; this is what ``certify`` writes
on its own.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from harness import __version__
from harness.console import clean
from harness.contracts.drift import drift_lines
from harness.contracts.records import CertificationRecord


def _cell(text: str) -> str:
    return clean(text, one_line=True).replace("|", "\\|").replace("`", "'")


_CHECK = {"pass": "pass", "fail": "**FAIL**", "undecided": "*undecided*"}
_VERDICT = {"eligible": "eligible", "ineligible": "**ineligible**", "undecided": "*undecided*"}


def markdown(
    records: Sequence[CertificationRecord], *, failover: dict[tuple[str, str], str]
) -> str:
    """A Markdown report: a summary table, then each pair's checks, evidence and drift."""
    lines = [
        "# Certification report",
        "",
        f"failover-harness {__version__}. One row per (provider, contract); a provider may be "
        "reached by automatic failover only when its link is `auto` and its verdict `eligible`: "
        "every check passed, a pass rate only when its one-sided lower confidence bound meets "
        "the contract's threshold (undecided: the bounds straddle it).",
        "",
        "| contract | provider | model | link | verdict | mode | samples | schema | tokenization "
        "| round trip |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        checks = {c.name: _CHECK[c.decision] for c in r.checks}
        mode = f"{r.mode}, {r.provenance}" if r.provenance else r.mode
        sampled = f"{r.sampling.calls} (k={r.sampling.k})" if r.sampling else "-"
        lines.append(
            f"| {_cell(r.contract)}@{_cell(r.contract_version)} | {_cell(r.provider)} | "
            f"{_cell(r.model)} | {failover.get(r.key, '?')} | {_VERDICT[r.verdict]} "
            f"| {_cell(mode)} | {sampled} | {checks.get('schema', '-')} | "
            f"{checks.get('tokenization', '-')} | {checks.get('round_trip', '-')} |"
        )
    for r in records:
        lines += [
            "",
            f"## {_cell(r.provider)} × {_cell(r.contract)}@{_cell(r.contract_version)}: "
            f"{r.verdict}" + (f" — {r.provenance}" if r.provenance else ""),
            "",
            f"model `{_cell(r.model)}` ({r.kind}), config `{r.config_hash[:12]}`, contract "
            f"`{r.contract_hash[:19]}`, {r.mode}, certified {r.certified_at:%Y-%m-%d %H:%M} UTC, "
            f"expires {r.expires_at:%Y-%m-%d %H:%M} UTC.",
        ]
        if r.sampling:
            s = r.sampling
            lines += ["", f"Sampling: {s.calls} calls, k = {s.k} per golden input, rule "
                      f"`{s.rule}` at {s.confidence:.0%} confidence"
                      + (f", adaptive (budget {s.budget})" if s.adaptive else "")
                      + ("; a per-sample seed was sent" if s.seeded else "") + "."]
        for c in r.checks:
            lines += ["", f"- **{c.name}**: {_CHECK[c.decision]} — {_cell(c.summary)}"]
            pass_k = c.figures.get("pass_k")
            if pass_k:
                lines.append(f"  - pass^{pass_k['k']}: {pass_k['all_pass']} of "
                             f"{pass_k['inputs']} golden inputs passed all {pass_k['k']} samples")
            for e in c.evidence:
                sample = f" sample {e.sample}" if e.sample is not None else ""
                excerpt = f" — `{_cell(e.excerpt)}`" if e.excerpt else ""
                lines.append(f"  - `{_cell(e.input_id)}`{sample}: {_cell(e.reason)}{excerpt}")
            if c.evidence_total > len(c.evidence):
                lines.append(f"  - … and {c.evidence_total - len(c.evidence)} more")
        drifted = drift_lines(r, limit=20)
        if drifted and r.drift:
            lines += ["", f"Drift since {r.drift['since']} ({r.drift['previous_verdict']}):"]
            lines += [f"- {_cell(line)}" for line in drifted]
    return "\n".join(lines) + "\n"


def write_reports(
    records: Sequence[CertificationRecord],
    path: Path,
    *,
    failover: dict[tuple[str, str], str],
) -> list[Path]:
    """Write ``path`` (Markdown) and the same name with ``.json``; returns both paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(records, failover=failover), encoding="utf-8")
    as_json = path.with_suffix(".json")
    as_json.write_text(
        json.dumps(
            {"harness_version": __version__, "certifications": [r.to_json() for r in records]},
            indent=2, ensure_ascii=False,
        ) + "\n",
        encoding="utf-8",
    )
    return [path, as_json]
