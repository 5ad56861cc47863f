"""The closing summary of the live output: what broke, grouped by promise (each with where, its
rate and ONE replay command), then what is unknown (each with its fix). Pure: Results in, lines
out; :mod:`harness.reports.live` prints them before the verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.reports.digest import problems
from harness.reports.model import Results, ScenarioRun, TrialSeries

MAX_PLACES = 4  # scenarios named per promise before "and N more"


@dataclass
class Broken:
    """One promise, everywhere it broke: ``places`` are "scenario (rate)" texts."""

    name: str
    places: list[str] = field(default_factory=list)
    replay: str = ""
    deterministic: bool = False  # the replay comes from a scripted run (reproduces every time)


def _series_rate(ts: TrialSeries, checker: str) -> tuple[int, int]:
    """Trials of ``ts`` that broke ``checker``: the worst of its failures, summed over patterns."""
    best = (0, 0)
    for f in ts.failures:
        if f.checker == checker:
            failed, trials = sum(r.failed for r in f.rates), sum(r.trials for r in f.rates)
            best = max(best, (failed, trials))
    return best


def broken_promises(results: Results) -> list[Broken]:
    """Every promise broken by a scenario run or a trial series, in the order first seen."""
    found: dict[str, Broken] = {}
    for event in results.events:
        if isinstance(event, ScenarioRun) and event.verdict == "failed":
            for check in event.checks:
                if check.verdict != "invalid":
                    continue
                b = found.setdefault(check.name, Broken(check.name))
                b.places.append(f"{event.scenario} 1/1")
                if event.replay_command and not b.deterministic:
                    b.replay, b.deterministic = event.replay_command, True
        elif isinstance(event, TrialSeries):
            for checker in dict.fromkeys(f.checker for f in event.failures):
                b = found.setdefault(checker, Broken(checker))
                failed, trials = _series_rate(event, checker)
                b.places.append(f"{event.scenario} {failed}/{trials}")
                first = next((f.first for f in event.failures
                              if f.checker == checker and f.first), None)
                if not b.replay and first is not None and first.replay_command:
                    b.replay = first.replay_command
    return list(found.values())


def _places(b: Broken) -> str:
    shown = ", ".join(b.places[:MAX_PLACES])
    more = len(b.places) - MAX_PLACES
    return shown + (f" and {more} more" if more > 0 else "")


def summary_lines(results: Results, *, runs: bool = True) -> Iterator[str]:
    """At most ~25 lines: broken promises (grouped by the run that replays them), other
    failures, unknowns with their fix. ``runs=False``: leave out what scenario runs found (the
    caller printed that run in full)."""
    names = _scenario_names(results)
    if not names:  # explore, replay, certify, gate: their own lines already end the output
        return
    broken = broken_promises(results) if runs else []
    found = [p for p in problems(results) if runs or p.where.split(" on ")[0] not in names]
    others = [p for p in found if p.kind == "fail" and p.where.split(" on ")[0] not in names
              and not p.where.startswith(("explore ", "replay of "))]  # printed in full above
    unknowns = [p for p in found if p.kind == "unknown"]
    if not (broken or others or unknowns):
        return
    yield "── summary " + "─" * 40
    if broken:
        yield (f"{len(broken)} promise(s) broken — where (runs that broke it / runs), and one "
               "command that replays it:")
    by_replay: dict[str, list[Broken]] = {}
    for b in broken:  # promises one run shows share its replay line
        by_replay.setdefault(b.replay, []).append(b)
    for command, group in by_replay.items():
        yield from (f"  {b.name}: {_places(b)}" for b in group)
        if command:
            yield f"      replay: {command}"
    for p in others:
        yield f"  FAILED {p.where}: {p.what}" + (f" — {p.detail}" if p.detail else "")
        if p.fix:
            yield f"      fix: {p.fix}"
    if unknowns:
        yield f"{len(unknowns)} unknown (no verdict without evidence):"
    for p in unknowns:
        yield f"  {p.where}: {p.what}"
        if p.fix:
            yield f"      fix: {p.fix}"


def _scenario_names(results: Results) -> set[str]:
    return {e.scenario for e in results.events if isinstance(e, ScenarioRun | TrialSeries)}
