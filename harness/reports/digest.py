"""What a user must act on, from any run: what broke, what is unknown (with the likely fix), and
the commands that reproduce it. Markdown, HTML and the live output's closing lines all list it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from harness.domain.verdicts import Outcome
from harness.domain.words import counted, of
from harness.reports.model import (
    Case,
    Certification,
    DetectionMatrix,
    DrillRun,
    Event,
    ExploreResult,
    GateVerdict,
    ReplayComparison,
    Results,
    ScenarioRun,
    TrialSeries,
)


@dataclass(frozen=True)
class Problem:
    """One thing to act on: ``where`` it happened, ``what`` (the promise or the reason),
    ``detail`` (what was seen, or the rate), the likely ``fix`` and the ``command`` to rerun."""

    kind: Outcome  # fail or unknown (what passed or was skipped is nothing to act on)
    where: str
    what: str
    detail: str = ""
    fix: str = ""
    command: str = ""


def command_in(text: str) -> str:
    """The ``failover-harness …`` command a fix names (``run: failover-harness certify …``)."""
    at = text.find("failover-harness ")
    return text[at:] if at >= 0 else ""


def _of_scenario(e: ScenarioRun) -> Iterator[Problem]:
    where = f"{e.scenario} on {e.target}"
    command = e.replay_command or ""
    if e.verdict == "broken":  # one line per run: the first promise broken, the others named
        broken = sorted((c for c in e.checks if c.verdict == "broken"),
                        key=lambda c: c.name == "scripted_outcomes")
        if broken:
            lead = broken[0]
            detail = lead.violations[0].message if lead.violations else ""
            if len(broken) > 1:
                detail += f" (also broken: {', '.join(c.name for c in broken[1:])})"
            yield Problem("fail", where, f"{lead.promise} ({lead.name})", detail, "", command)
    elif e.verdict == "unknown":
        unknowns = [(u, c) for c in e.checks for u in c.unknowns]
        if e.unrun:
            yield Problem("unknown", where, f"did not happen: {e.unrun[0].why}",
                          f"and {counted(len(e.unrun) - 1, 'more step')}" if len(e.unrun) > 1
                          else "",
                          e.unrun[0].fix or e.fix, command)
        elif unknowns:
            first, check = unknowns[0]
            yield Problem("unknown", where, f"{first.reason} ({check.name})",
                          "; ".join(u.reason for u, _ in unknowns[1:]),
                          first.fix or (check.fixes[0] if check.fixes else ""), command)
        else:
            yield Problem("unknown", where, e.reason or "verdict unknown", "", e.fix, command)


def _of_series(e: TrialSeries) -> Iterator[Problem]:
    where = f"{e.scenario} on {e.target}"
    for f in e.failures:
        rates = ", ".join(f"{r.pattern} {r.failed} of {r.trials}" if r.pattern != "sequential"
                          else of(r.failed, r.trials, "trial") for r in f.rates)
        command = f.first.replay_command if f.first and f.first.replay_command else ""
        yield Problem("fail", where, f"{f.title} ({f.checker})", rates, "", command)
    for u in e.unknowns:
        what = f"{u.reason} ({u.checker})" if u.checker else u.reason
        fix = u.fix or (e.fixes[0] if len(e.fixes) == 1 else "")
        command = u.first.replay_command if u.first and u.first.replay_command else ""
        yield Problem("unknown", where, what, counted(u.count, "trial"), fix, command or "")


def _of(event: Event) -> Iterator[Problem]:
    if isinstance(event, ScenarioRun):
        yield from _of_scenario(event)
    elif isinstance(event, TrialSeries):
        yield from _of_series(event)
    elif isinstance(event, DetectionMatrix):
        for text in event.problems:
            yield Problem("fail", "detection matrix", text)
    elif isinstance(event, ExploreResult) and event.verdict != "pass":
        broken = [c for c in event.checks if c.verdict == "broken"]
        unknown = [f"{c.name}: {u.reason}" for c in event.checks for u in c.unknowns]
        what = ("; ".join(f"{c.promise} ({c.name})" for c in broken) or "; ".join(unknown)
                or "verdict unknown")
        detail = (f"a race in {counted(len(event.schedule), 'step')}, found after "
                  f"{counted(event.schedules_tried, 'schedule')}") if broken else ""
        fix = "" if broken else next((u.fix for c in event.checks for u in c.unknowns
                                      if u.fix), "")
        yield Problem("fail" if broken else "unknown", f"explore {event.workload} on "
                      f"{event.target}", what, detail, fix, event.replay_command or "")
    elif isinstance(event, Certification) and event.outcome in ("fail", "unknown"):
        yield Problem("fail" if event.outcome == "fail" else "unknown",
                      f"{event.provider} × {event.contract}",
                      event.verdict, event.why,
                      event.fix, command_in(event.fix))
    elif isinstance(event, GateVerdict):
        for gp in event.problems:
            yield Problem("fail" if gp.state == "failed" else "unknown",
                          f"gate: {gp.provider} × {gp.contract}", gp.state, gp.why, gp.fix,
                          command_in(gp.fix))
    elif isinstance(event, ReplayComparison) and event.outcome == "fail":
        yield Problem("fail", f"replay of {event.source}", "the history diverged",
                      event.divergence)
    elif isinstance(event, DrillRun) and event.outcome in ("fail", "unknown"):
        yield from _of_drill(event)
    elif isinstance(event, Case) and event.outcome in ("fail", "unknown"):
        yield Problem(event.outcome, f"{event.name} ({event.suite})",
                      event.message, "; ".join(event.details[:1]), "", event.command)


def _of_drill(d: DrillRun) -> Iterator[Problem]:
    where = f"drill {d.drill} on {d.target}"
    for p in d.promises:
        if p.broken:
            yield Problem("fail", where, p.title, f"{p.text}: {p.example}", "", d.command)
    if d.verdict == "unknown":
        for u in d.unknowns:
            yield Problem("unknown", where, u.reason, "", u.fix, d.command)


def problems(results: Results) -> list[Problem]:
    """Everything to act on, failures first, in the order the events came; the same unknown
    (reason and fix) in several runs is one problem naming them (a refused token makes every
    scenario unknown: one line, one fix)."""
    found = [p for e in results.events for p in _of(e)]
    return ([p for p in found if p.kind == "fail"]
            + _grouped([p for p in found if p.kind == "unknown"]))


def _grouped(unknowns: list[Problem]) -> list[Problem]:
    groups: dict[str, list[Problem]] = {}
    for p in unknowns:  # one fix, one line: the fix is what the user acts on
        groups.setdefault(p.fix or _shape(p.what), []).append(p)
    out = []
    for same in groups.values():
        names = list(dict.fromkeys(p.where.split(" on ")[0] for p in same))
        if len(names) == 1:
            out.append(same[0])
            continue
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        out.append(Problem("unknown", f"{len(names)} scenarios ({shown})", same[0].what,
                           same[0].detail, same[0].fix))  # one replay would not help
    return out


def _shape(text: str) -> str:
    """A reason without its step and op numbers, so the same cause groups across scenarios."""
    import re

    return re.sub(r"\b(step|op|line) \d+", r"\1 N", text)


def commands(found: list[Problem]) -> list[str]:
    return list(dict.fromkeys(p.command for p in found if p.command))
