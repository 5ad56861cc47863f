"""``summary.md``: the run in a form that fits a pull-request comment."""

from __future__ import annotations

from harness.reports.model import RunReport

_ICON = {
    "pass": "✅", "passed": "✅", "eligible": "✅", "valid": "✅",
    "fail": "❌", "failed": "❌", "ineligible": "❌", "invalid": "❌",
    "unknown": "❔", "undecided": "❔", "not_applicable": "➖", "skipped": "➖",
}


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: RunReport) -> str:
    lines = [
        f"## failover-harness {report.command}: {_ICON[report.verdict]} {report.verdict.upper()}",
        "",
        f"exit code {report.exit_code} · {report.started_at} · harness {report.harness_version}",
        "",
    ]
    if report.gate is not None:
        gate = report.gate
        lines += [f"**Gate:** {_ICON[gate.verdict]} {gate.verdict} "
                  f"({gate.links_checked} auto-failover links checked)", ""]
        if gate.problems:
            lines += ["| provider | contract | state | why | fix |", "|---|---|---|---|---|"]
            lines += [
                f"| {p.provider} | {p.contract} | {p.state} | {_esc(p.why)} | `{_esc(p.fix)}` |"
                for p in gate.problems
            ]
            lines.append("")
    if report.scenarios:
        counts = ", ".join(f"{n} {v}" for v, n in sorted(report.counts.items()))
        lines += [f"### Scenarios ({counts})", "", "| scenario | target | verdict | detail |",
                  "|---|---|---|---|"]
        for s in report.scenarios:
            broken = "; ".join(
                f"{c.name}: {c.violations[0]}" for c in s.checks if c.verdict == "invalid"
            ) or s.reason
            lines.append(
                f"| {s.name} | {s.target} | {_ICON[s.verdict]} {s.verdict} | {_esc(broken)} |"
            )
        lines.append("")
        for s in report.scenarios:
            if s.verdict == "failed" and s.replay_command:
                lines += [f"Reproduce `{s.name}`:", "", f"    {s.replay_command}", ""]
    if report.matrix is not None:
        m = report.matrix
        lines += ["### Detection matrix", "", "| scenario | " + " | ".join(m.targets) + " |",
                  "|---|" + "---|" * len(m.targets)]
        for scenario in m.scenarios:
            cells = [_ICON.get(m.cell(scenario, t) or "", "") for t in m.targets]
            lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
        caught = [t for t in m.targets if t != m.reference and m.caught(t)]
        missed = [t for t in m.targets if t != m.reference and not m.caught(t)]
        lines += ["", f"Mutants caught: {len(caught)} of {len(caught) + len(missed)}"
                  + (f" (missed: {', '.join(missed)})" if missed else ""), ""]
    if report.certifications:
        lines += ["### Certification", "", "| provider | contract | verdict | checks |",
                  "|---|---|---|---|"]
        for c in report.certifications:
            checks = ", ".join(f"{_ICON[k.verdict]} {k.name}" for k in c.checks)
            lines.append(f"| {c.provider} ({c.model}) | {c.contract} | "
                         f"{_ICON[c.verdict]} {c.verdict} | {checks} |")
        lines.append("")
    lines += list(report.notes)
    return "\n".join(lines).rstrip() + "\n"
