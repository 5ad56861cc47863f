"""The certification report: Markdown for people, JSON for machines, from the same records.

(The reports layer renders richer formats from these records; this is what ``certify`` writes
on its own.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from harness import __version__
from harness.contracts.records import CertificationRecord


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(
    records: Sequence[CertificationRecord], *, failover: dict[tuple[str, str], str]
) -> str:
    """A Markdown report: a summary table, then each pair's checks and evidence."""
    lines = [
        "# Certification report",
        "",
        f"failover-harness {__version__}. One row per (provider, contract); a provider may be "
        "reached by automatic failover only when its link is `auto` and its verdict `eligible`.",
        "",
        "| contract | provider | model | link | verdict | mode | schema | tokenization "
        "| round trip |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        checks = {c.name: ("pass" if c.passed else "**FAIL**") for c in r.checks}
        verdict = "eligible" if r.verdict == "eligible" else "**ineligible**"
        lines.append(
            f"| {r.contract}@{r.contract_version} | {r.provider} | {_cell(r.model)} | "
            f"{failover.get(r.key, '?')} | {verdict} "
            f"| {r.mode} | {checks.get('schema', '-')} | {checks.get('tokenization', '-')} | "
            f"{checks.get('round_trip', '-')} |"
        )
    for r in records:
        lines += [
            "",
            f"## {r.provider} × {r.contract}@{r.contract_version}: {r.verdict}",
            "",
            f"model `{r.model}` ({r.kind}), config `{r.config_hash[:12]}`, contract "
            f"`{r.contract_hash[:19]}`, {r.mode}, certified {r.certified_at:%Y-%m-%d %H:%M} UTC, "
            f"expires {r.expires_at:%Y-%m-%d %H:%M} UTC.",
        ]
        for c in r.checks:
            lines += ["", f"- **{c.name}**: {'pass' if c.passed else 'FAIL'} — {_cell(c.summary)}"]
            for e in c.evidence:
                sample = f" sample {e.sample}" if e.sample is not None else ""
                excerpt = f" — `{_cell(e.excerpt)}`" if e.excerpt else ""
                lines.append(f"  - `{e.input_id}`{sample}: {_cell(e.reason)}{excerpt}")
            if c.evidence_total > len(c.evidence):
                lines.append(f"  - … and {c.evidence_total - len(c.evidence)} more")
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
