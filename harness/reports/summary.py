"""What to act on, grouped by promise — one place for the live output's closing summary,
``summary.md`` and ``index.html``: each broken promise once (with where, how often and ONE replay
command), then what else failed, then what is unknown (each with its fix). Pure: Results in,
data or lines out; :mod:`harness.reports.live` prints :func:`summary_lines` before the verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.domain.words import counted
from harness.reports.digest import Problem, problems
from harness.reports.model import DrillRun, Results, ScenarioRun, TrialSeries

MAX_PLACES = 4  # scenarios named per promise before "and N more"


@dataclass
class Place:
    """One scenario where a promise broke: in ``failed`` of its ``runs`` runs (trials)."""

    scenario: str
    failed: int
    runs: int
    patterns: tuple[tuple[str, int, int], ...] = ()  # (pattern, failed, trials) when several

    @property
    def short(self) -> str:
        return f"{self.scenario} {self.failed}/{self.runs}"

    @property
    def words(self) -> str:
        rates = ", ".join(f"{p} {f} of {n}" for p, f, n in self.patterns)
        return f"{self.scenario} ({rates or f'{self.failed} of ' + counted(self.runs, 'run')})"


@dataclass
class Broken:
    """One promise, everywhere it broke."""

    name: str
    promise: str = ""  # what was promised, in words (the first run's wording)
    places: list[Place] = field(default_factory=list)
    replay: str = ""
    deterministic: bool = False  # the replay comes from a scripted run (reproduces every time)


def _series_place(ts: TrialSeries, checker: str) -> Place:
    """Trials of ``ts`` that broke ``checker``: the worst of its failures, summed over patterns
    (each pattern's rate kept when there are several)."""
    best = Place(ts.scenario, 0, 0)
    for f in ts.failures:
        if f.checker == checker:
            failed, trials = sum(r.failed for r in f.rates), sum(r.trials for r in f.rates)
            if (failed, trials) > (best.failed, best.runs):
                patterns = tuple((r.pattern, r.failed, r.trials) for r in f.rates
                                 if r.pattern != "sequential")
                best = Place(ts.scenario, failed, trials, patterns)
    return best


def broken_promises(results: Results, *, drills: bool = True) -> list[Broken]:
    """Every promise broken by a scenario run, a trial series or a drill (the drill's promise
    under its one name: ``one_job_per_intent`` from both halves is one line), in the order first
    seen."""
    found: dict[str, Broken] = {}
    for event in results.events:
        if isinstance(event, ScenarioRun) and event.verdict == "broken":
            for check in event.checks:
                if check.verdict != "broken":
                    continue
                b = found.setdefault(check.name, Broken(check.name, check.promise))
                b.places.append(Place(event.scenario, 1, 1))
                if event.replay_command and not b.deterministic:
                    b.replay, b.deterministic = event.replay_command, True
        elif isinstance(event, TrialSeries):
            for checker in dict.fromkeys(f.checker for f in event.failures):
                promise = next(f.promise for f in event.failures if f.checker == checker)
                b = found.setdefault(checker, Broken(checker, promise))
                b.places.append(_series_place(event, checker))
                first = next((f.first for f in event.failures
                              if f.checker == checker and f.first), None)
                if not b.replay and first is not None and first.replay_command:
                    b.replay = first.replay_command
        elif isinstance(event, DrillRun) and drills:  # its promises, under the same names
            for rate in event.promises:
                if not rate.broken:
                    continue
                b = found.setdefault(rate.promise, Broken(rate.promise, rate.title))
                total = rate.held + rate.broken + rate.unknown + rate.not_judged
                b.places.append(Place(f"drill {event.drill}", rate.broken, total))
                if not b.replay and event.command:
                    b.replay = event.command
    return list(found.values())


def _places(b: Broken) -> str:
    shown = ", ".join(p.short for p in b.places[:MAX_PLACES])
    more = len(b.places) - MAX_PLACES
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass
class ToActOn:
    """What to act on: ``broken`` promises (scenario runs and trial series, grouped by promise),
    ``others`` that failed (certification, gate, explore, drill, checks …), ``unknowns``."""

    broken: list[Broken]
    others: list[Problem]
    unknowns: list[Problem]

    def by_replay(self) -> list[tuple[str, list[Broken]]]:
        """Promises one run shows share its replay command (said once, after them)."""
        grouped: dict[str, list[Broken]] = {}
        for b in self.broken:
            grouped.setdefault(b.replay, []).append(b)
        return list(grouped.items())

    def __bool__(self) -> bool:
        return bool(self.broken or self.others or self.unknowns)

    def failures(self) -> str:
        """``3 other failures`` beside broken promises; ``3 failures`` when they are all."""
        return counted(len(self.others), "other failure" if self.broken else "failure")


def to_act_on(results: Results, *, runs: bool = True) -> ToActOn:
    """``runs=False``: leave out what scenario runs found (a caller that showed them in full)."""
    names = _scenario_names(results)
    found = [p for p in problems(results) if runs or p.where.split(" on ")[0] not in names]
    both = runs and bool(names)  # check --target with a drill: its promises join the scenarios'
    return ToActOn(
        broken_promises(results, drills=both) if runs else [],
        [p for p in found if p.kind == "fail" and p.where.split(" on ")[0] not in names
         and not (both and p.where.startswith("drill "))],
        [p for p in found if p.kind == "unknown"])


def summary_lines(results: Results, *, runs: bool = True) -> Iterator[str]:
    """At most ~25 lines: broken promises (grouped by the run that replays them), other
    failures, unknowns with their fix. ``runs=False``: leave out what scenario runs found (the
    caller printed that run in full)."""
    if not _scenario_names(results):  # explore, replay, certify, gate: their own lines end it
        return
    act = to_act_on(results, runs=runs)
    others = [p for p in act.others  # explore and replay were printed in full above
              if not p.where.startswith(("explore ", "replay of "))]
    if not (act.broken or others or act.unknowns):
        return
    yield "── summary " + "─" * 40
    if act.broken:
        yield (f"{counted(len(act.broken), 'promise')} broken — where (runs that broke it / "
               "runs), and one command that replays it:")
    for command, group in act.by_replay():
        yield from (f"  {b.name}: {_places(b)}" for b in group)
        if command:
            yield f"      replay: {command}"
    for p in others:
        yield f"  FAILED {p.where}: {p.what}" + (f" — {p.detail}" if p.detail else "")
        if p.fix:
            yield f"      fix: {p.fix}"
    if act.unknowns:
        yield f"{len(act.unknowns)} unknown (no verdict without evidence):"
    for p in act.unknowns:
        yield f"  {p.where}: {p.what}"
        if p.fix:
            yield f"      fix: {p.fix}"


def _scenario_names(results: Results) -> set[str]:
    return {e.scenario for e in results.events if isinstance(e, ScenarioRun | TrialSeries)}
