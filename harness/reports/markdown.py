"""``summary.md``: a pull-request comment that fits on one screen — the verdicts, what broke (with
its rate), what is unknown and why, and the commands that reproduce it; every verdict folded
below."""

from __future__ import annotations

from harness.domain.published import word
from harness.domain.words import counted
from harness.reports.digest import Problem
from harness.reports.digest import commands as command_list
from harness.reports.model import (
    Case,
    Certification,
    DetectionMatrix,
    DrillRun,
    ExploreResult,
    GateVerdict,
    ReplayComparison,
    Results,
    ScenarioRun,
    TrialSeries,
)
from harness.reports.redaction import bounded_lines, scrub
from harness.reports.summary import ToActOn, to_act_on

ICON = {
    "pass": "✅", "passed": "✅", "eligible": "✅", "valid": "✅",
    "fail": "❌", "failed": "❌", "ineligible": "❌", "invalid": "❌",
    "unknown": "❔", "undecided": "❔", "not_applicable": "➖", "skipped": "➖", "skip": "➖",
}
MAX_PROBLEMS = 8  # a comment should fit on one screen: the rest is in index.html


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _headline(r: Results) -> list[str]:
    parts = []
    counts = r.counts
    if counts:
        parts.append("**Scenarios:** " + ", ".join(
            f"{n} {v.replace('_', ' ')}" for v, n in sorted(counts.items())))
    for m in r.of(DetectionMatrix):
        mutants = [t for t in m.targets if t != m.reference]
        caught = sum(1 for t in mutants if m.caught(t))
        parts.append(f"**Mutants caught:** {caught} of {len(mutants)}"
                     + (" by this shard's cells" if m.shard_part else "")
                     + (" (reference flagged!)" if m.caught(m.reference) else ""))
    for e in r.of(ExploreResult):
        parts.append(f"**Explore** {e.workload}: {ICON[word(e)]} {word(e)} after "
                     f"{counted(e.schedules_tried, 'schedule')}")
    certs = r.of(Certification)
    if certs:
        eligible = [c for c in certs if c.verdict == "eligible"]
        parts.append(f"**Certification:** {len(eligible)} of {len(certs)} eligible"
                     + _fakes(sum(1 for c in eligible if c.provenance), len(eligible)))
    for g in r.of(GateVerdict):
        parts.append(f"**Gate:** {ICON[g.verdict]} {g.verdict} "
                     f"({counted(g.links_checked, 'auto link')})"
                     + _fakes(len(g.fakes), g.links_checked - len(g.problems)))
    for p in r.of(ReplayComparison):
        same = ("identical" if p.identical else "diverged" if p.identical is False
                else "not compared")
        parts.append(f"**Replay:** history {same}")
    cases = r.of(Case)
    if cases:
        failed = sum(1 for c in cases if c.outcome == "fail")
        parts.append(f"**Checks:** {len(cases) - failed} of {len(cases)} hold")
    return [" · ".join(parts), ""] if parts else []


def _fakes(fakes: int, of: int) -> str:
    """A verdict that rests on fake providers says so where a reader looks first."""
    if not fakes:
        return ""
    which = ("a fake provider" if of == 1 else "all fake providers" if fakes == of
             else f"{fakes} of them fake provider{'s' if fakes > 1 else ''}")
    return f" — {which} (answers from the golden file): not evidence about a model"


def _drift(r: Results) -> list[str]:
    """What changed since the last certification (noise is not listed as a change)."""
    items = [f"{c.provider} × {c.contract}: {d.text or f'{d.field}: {d.previous} → {d.current}'}"
             for c in r.of(Certification) for d in c.drift]
    return _listed("Drift since the last certification", "↕", items)


def _item(p: Problem) -> str:
    detail = f" — {p.detail}" if p.detail else ""
    fix = f" (fix: {p.fix})" if p.fix and p.fix.removeprefix("run: ") != p.command else ""
    return f"**{p.where}**: {p.what}{detail}{fix}"


def _act_on(act: ToActOn) -> list[str]:
    """Each broken promise once (where, how often, one replay for the promises a run shows),
    then the other failures, then the unknowns with their fix."""
    items, shown = [], 0
    for command, group in act.by_replay():
        for b in group:
            if shown < MAX_PROBLEMS:
                places = ", ".join(p.words for p in b.places)
                items.append(f"- {ICON['fail']} **{b.name}**: {_esc(b.promise)} — broke in "
                             f"{_esc(places)}")
            shown += 1
        if command and shown <= MAX_PROBLEMS:
            items.append(f"  - replay: `{command}`")
    if shown > MAX_PROBLEMS:
        items.append(f"- … and {counted(shown - MAX_PROBLEMS, 'more broken promise')} "
                     "(index.html has them all)")
    title = f"What broke: {counted(len(act.broken), 'promise')}" if act.broken else ""
    lines = [f"### {title}", "", *items, ""] if items else []
    others = _listed("What else broke" if act.broken else "What broke", ICON["fail"],
                     [_item(p) for p in act.others])
    return lines + others + _listed("Unknown", ICON["unknown"], [_item(p) for p in act.unknowns])


def _verdict(r: Results, act: ToActOn) -> str:
    parts = [f"{counted(len(act.broken), 'promise')} broken"] if act.broken else []
    parts += [act.failures()] if act.others else []
    parts += [f"{len(act.unknowns)} unknown"] if act.unknowns else []
    return (f"**Verdict:** {ICON[r.verdict]} {r.verdict.upper()} (exit {r.exit_code}) — "
            + ", ".join(parts))


def _listed(title: str, icon: str, items: list[str]) -> list[str]:
    if not items:
        return []
    shown = [f"- {icon} {_esc(i)}" for i in items[:MAX_PROBLEMS]]
    if len(items) > MAX_PROBLEMS:
        shown.append(f"- … and {counted(len(items) - MAX_PROBLEMS, 'more problem')} (index.html "
                     "has them all)")
    return [f"### {title}", "", *shown, ""]


def _all_verdicts(r: Results) -> list[str]:
    rows = []
    for e in r.events:
        if isinstance(e, ScenarioRun | TrialSeries):
            if isinstance(e, ScenarioRun):
                detail = ", ".join(c.name for c in e.checks if c.verdict == "broken")
            else:
                detail = ", ".join(dict.fromkeys(f.checker for f in e.failures)) or (
                    e.unknowns[0].reason if e.unknowns else "")
            detail = _short(detail or e.reason)
            rows.append(f"| {e.scenario} | `{_esc(e.target)}` | {ICON[word(e)]} "
                        f"{word(e).replace('_', ' ')} | {_esc(detail)} |")
        elif isinstance(e, Certification):
            checks = ", ".join(f"{ICON[word(k)]} {k.name}" for k in e.checks)
            fake = f" — {e.provenance}" if e.provenance else ""
            rows.append(f"| {e.provider} × {e.contract} ({e.failover or 'no link'}) | "
                        f"`{_esc(e.model)}` | {ICON[e.verdict]} {e.verdict}{_esc(fake)} | "
                        f"{checks} |")
        elif isinstance(e, DrillRun):
            detail = "; ".join(f"{p.title}: {p.text}" for p in e.promises if p.broken) or (
                e.unknowns[0].reason if e.unknowns else counted(e.trials, "intent"))
            rows.append(f"| drill {e.drill} | `{_esc(e.target)}` | {ICON[e.outcome]} "
                        f"{word(e)} | {_esc(_short(detail))} |")
        elif isinstance(e, Case):
            rows.append(f"| {_esc(e.name)} | {e.suite} | {ICON[e.outcome]} {e.outcome} | "
                        f"{_esc(e.message)} |")
    if not rows:
        return []
    return ["<details><summary>Every verdict</summary>", "",
            "| what | where | verdict | detail |", "|---|---|---|---|", *rows, "", "</details>",
            ""]


def render_markdown(results: Results) -> str:
    results = scrub(results)  # no secret, no raw escape, no lone surrogate reaches the file
    r = results
    targets = f" · target {', '.join(f'`{t}`' for t in r.targets)}" if r.targets else ""
    lines = [f"## failover-harness {r.command}: {ICON[r.verdict]} {r.verdict.upper()}", "",
             f"exit code {r.exit_code}{targets} · {r.started_at} · harness {r.harness_version}",
             ""]
    lines += _headline(r)
    act = to_act_on(r)
    lines += _act_on(act)
    commands = command_list(act.others + act.unknowns)
    if commands:
        shown = commands[:MAX_PROBLEMS]
        lines += ["### Reproduce", "", "```sh", *shown, "```", ""]
        if len(commands) > len(shown):
            lines += [f"… and {len(commands) - len(shown)} more commands in results.json", ""]
    if any("/runs/" in c or "/repro/" in c for c in commands + [b.replay for b in act.broken]):
        lines += ["(Run folders are named as this run saw them; in a downloaded copy of the "
                  "report folder they are its `runs/` and `repro/`.)", ""]
    if act:
        lines += [_verdict(r, act), ""]
    lines += _drift(r)
    lines += _listed("Certified, but fake providers", ICON["skip"],
                     [fake for g in r.of(GateVerdict) for fake in g.fakes])
    lines += _all_verdicts(r)
    lines += list(r.notes)
    return bounded_lines("\n".join(lines).rstrip()) + "\n"
