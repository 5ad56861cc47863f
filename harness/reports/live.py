"""The live CLI output: one more handler of the run's events, printing plain text as they come.

Text from scenarios, services, models and files is printed as text (never interpreted as markup).
``--quiet`` prints only what broke or is unknown, and the verdict; ``--json`` sends these lines to
stderr so that stdout holds the document alone.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from harness.console import clean
from harness.domain.verdicts import STATUS_LABEL
from harness.domain.words import counted, of
from harness.reports.model import (
    Case,
    Certification,
    DetectionMatrix,
    DrillRun,
    Event,
    ExploreResult,
    GateVerdict,
    LoserCount,
    ReplayComparison,
    Results,
    ScenarioRun,
    TrialSeries,
    Violation,
)
from harness.reports.redaction import bounded_lines
from harness.reports.session import Handler, Header
from harness.reports.summary import summary_lines

LABELS = STATUS_LABEL
#: the label of a search's or a drill's verdict
JUDGED_LABEL = {"pass": "PASS", "fail": "VIOLATED", "unknown": "UNKNOWN"}
SEQUENTIAL = "sequential"
MAX_OPS_SHOWN = 12


def histogram_text(bars: tuple[LoserCount, ...]) -> str:
    return ", ".join(f"{b.answer} {b.count}" for b in bars) or "—"


def _violation(v: Violation, indent: str, limit: int | None = None) -> Iterator[str]:
    yield f"{indent}- {v.message}"
    shown = v.history if limit is None else v.history[:limit]
    yield from (f"{indent}    {line}" for line in shown)
    if limit is not None and len(v.history) > limit:
        yield f"{indent}    … {len(v.history) - limit} more ops in the run folder"


def scenario_lines(s: ScenarioRun) -> Iterator[str]:
    label = LABELS[s.verdict]
    if s.verdict == "not_applicable":
        yield f"{label:<9} {s.scenario}: {s.reason}"
        return
    if s.source == "drill":  # judged by the drill (docs/drill.md), not played as a scenario
        yield f"{label:<9} {s.scenario}: {s.reason}"
    else:
        yield (f"{label:<9} {s.scenario}  ({counted(s.ops, 'op')}, {s.virtual_s:g} s virtual in "
               f"{s.wall_s * 1000:.0f} ms)")
    yield from (f"  warning: {w}" for w in s.warnings)
    yield from (f"  did not happen: {u.why}" for u in s.unrun)
    if s.unrun and s.fix:
        yield f"    fix: {s.fix}"
    for check in s.checks:
        if check.verdict == "broken":
            yield f"  promise broken ({check.name}): {check.promise}"
            for violation in check.violations:
                yield from _violation(violation, "    ")
        elif check.verdict == "unknown":
            yield f"  unknown ({check.name}): {'; '.join(u.reason for u in check.unknowns)}"
            fixes = [u.fix for u in check.unknowns if u.fix] + list(check.fixes)
            yield from (f"    fix: {fix}" for fix in dict.fromkeys(fixes))
    if (s.verdict == "unknown" and not s.unrun and s.reason
            and not any(c.verdict == "unknown" for c in s.checks)):
        yield f"  unknown: {s.reason}" + (f" (fix: {s.fix})" if s.fix else "")
    if s.replay_command and s.verdict in ("broken", "unknown"):
        yield f"  replay: {s.replay_command}"


def brief_lines(event: Event) -> Iterator[str]:
    """One line for a scenario run or a trial series (the detail is behind ``--verbose``)."""
    if isinstance(event, ScenarioRun):
        label = LABELS[event.verdict]
        if event.source == "drill":  # judged by the drill (docs/drill.md), not played
            yield f"{label:<9} {event.scenario}: {event.reason}"
            return
        if not event.ops and event.verdict == "unknown":  # why: in the summary, with its fix
            yield f"{label:<9} {event.scenario}  (nothing ran: the summary says why)"
            return
        yield (f"{label:<9} {event.scenario}  ({counted(event.ops, 'op')}, {event.virtual_s:g} s "
               f"virtual in {event.wall_s * 1000:.0f} ms)")
        return
    assert isinstance(event, TrialSeries)
    label = LABELS[event.verdict]
    if event.verdict == "not_applicable":
        yield f"{label:<9} {event.scenario}: {event.reason}"
        return
    if [p.pattern for p in event.patterns] == [SEQUENTIAL]:
        line = (f"{label:<9} {event.scenario}  ({counted(event.trials, 'trial')}, "
                f"{event.wall_s:.1f} s)")
        rates = f"{event.patterns[0].violated}/{event.trials}"
    else:
        line = (f"{label:<9} {event.scenario}  ({counted(len(event.patterns), 'pattern')} × "
                f"{counted(event.trials, 'trial')}, {event.wall_s:.1f} s)")
        rates = ", ".join(f"{p.pattern} {p.violated}/{p.trials}" for p in event.patterns)
    if event.verdict == "broken":
        line += f": {rates} broke a promise"
    yield line


NEEDS = re.compile(r"^needs (?P<needs>[a-z_, ]+?)(?: \(.*\))?, which (?P<who>.+) does not declare$")


def not_applicable_lines(runs: list[ScenarioRun]) -> Iterator[str]:
    """The scenarios a target cannot run: those lacking capabilities the profile does not
    declare as one line (per profile), any other reason as its own line."""
    grouped: dict[str, list[tuple[ScenarioRun, re.Match[str]]]] = {}
    for run in runs:
        match = NEEDS.match(run.reason)
        if match is None:
            yield f"N/A       {run.scenario}: {run.reason}"
        else:
            grouped.setdefault(match.group("who"), []).append((run, match))
    for who, found in grouped.items():
        if len(found) == 1:
            yield f"N/A       {found[0][0].scenario}: {found[0][0].reason}"
            continue
        needs = dict.fromkeys(n.strip() for _, m in found for n in m.group("needs").split(","))
        yield (f"N/A       {len(found)} scenarios need {', '.join(needs)} (not in {who}; "
               "--verbose names them)")


def series_lines(ts: TrialSeries) -> Iterator[str]:
    label = LABELS[ts.verdict]
    if ts.verdict == "not_applicable":
        yield f"{label:<9} {ts.scenario}: {ts.reason}"
        return
    runs = sum(p.trials for p in ts.patterns)
    yield (f"{label:<9} {ts.scenario}  ({counted(len(ts.patterns), 'pattern')} × "
           f"{counted(ts.trials, 'trial')}: {counted(runs, 'run')} in {ts.wall_s:.1f} s)")
    yield from (f"  warning: {w}" for w in ts.warnings)
    grouped = [p.pattern for p in ts.patterns] != [SEQUENTIAL]
    width = max((len(p.pattern) for p in ts.patterns), default=0)
    for p in ts.patterns:
        line = (f"  {p.pattern:<{width}}  {p.violated:>3} of {counted(p.trials, 'trial')} broke a "
                "promise")
        if grouped:
            line += f"; loser answers: {histogram_text(p.losers)}"
            if p.busy:
                line += ("; busy answers for requests that never ran: "
                         + ", ".join(f"{b.answer} {b.count}" for b in p.busy))
        yield line
    for failure in ts.failures:
        yield f"  FAILURE: {failure.title}  [{failure.checker}]"
        yield f"    promise: {failure.promise}"
        for rate in failure.rates:
            shown = "" if rate.pattern == SEQUENTIAL else f"{rate.pattern}: "
            yield f"    {shown}{rate.text}"
        first = failure.first
        if first is None:
            continue
        where = "" if first.pattern is None else f"{first.pattern}, "
        yield f"    first seen in {where}trial {first.trial} of {ts.trials} (seed {first.seed}):"
        for violation in first.violations:
            yield from _violation(violation, "      ", MAX_OPS_SHOWN)
        if first.replay_command:
            yield f"    run this trial again: {first.replay_command}"
            seen = next((r for r in failure.rates if r.pattern == (first.pattern or SEQUENTIAL)),
                        None)
            if seen is not None and seen.failed < seen.trials:
                yield (f"      (the same arrivals; the race showed in "
                       f"{of(seen.failed, seen.trials, 'trial')}, so one run may pass: a pass is "
                       "not a fix)")
        if first.measure_command:
            yield f"    measure the rate again: {first.measure_command}"
    for u in ts.unknowns:
        reason = f"{u.checker}: {u.reason}" if u.checker else u.reason
        yield f"  unknown ({of(u.count, runs, 'run')}): {reason}"
    evidence = {u.first.replay_command: u.first for u in ts.unknowns
                if u.first is not None and u.first.replay_command}
    for command, first in evidence.items():
        where = f"{first.pattern}, " if first.pattern else ""
        yield f"    first unknown trial ({where}trial {first.trial}, seed {first.seed}):"
        for violation in first.violations:
            yield from _violation(violation, "      ", MAX_OPS_SHOWN)
        yield f"    run that trial again: {command}"
    if ts.unknowns:
        fixes = [u.fix for u in ts.unknowns if u.fix] + list(ts.fixes)
        yield from (f"    fix: {fix}" for fix in dict.fromkeys(fixes))


def matrix_lines(m: DetectionMatrix) -> Iterator[str]:
    mutants = [t for t in m.targets if t != m.reference]
    missed = [t for t in mutants if not m.caught(t)]
    line = f"detection matrix: {len(mutants) - len(missed)} of {len(mutants)} mutants caught"
    if m.shard_part:  # whether a mutant is caught is judged when the shards are merged
        line += " by this shard's cells (the others: judged by merge)" if missed else ""
    else:
        line += f"; missed: {', '.join(missed)}" if missed else ""
    line += "; reference flagged!" if m.caught(m.reference) else "; reference clean"
    yield line
    yield from (f"  problem: {p}" for p in m.problems)


def _schedule(e: ExploreResult) -> Iterator[str]:
    for step in e.schedule:
        if step.kind == "timer":
            yield f"     --  {step.statement} (virtual time jumps)"
            continue
        waited = "   (BUSY: waits for the writer, retried as a new step)" if step.waited else ""
        yield f"    {step.n:>3}  {step.client:<12} {step.operation:<22} {step.statement}{waited}"


def explore_lines(e: ExploreResult) -> Iterator[str]:
    broken = [c for c in e.checks if c.verdict == "broken"]
    names = ", ".join(c.name for c in broken)
    if e.mode == "replay":
        yield (f"{JUDGED_LABEL[e.verdict]:<9} {e.workload}: "
               f"{counted(e.shrunk_steps or 0, 'step')}, {counted(e.ops, 'op')}")
    elif e.verdict == "pass" or not broken:  # a search with no violation (unknown: evidence)
        yield e.note or (f"no violation in {counted(e.schedules_tried, 'schedule')} "
                         f"({counted(e.steps_tried, 'step')})")
        for fix in dict.fromkeys(u.fix for c in e.checks for u in c.unknowns if u.fix):
            yield f"  fix: {fix}"
        return
    elif e.mode == "stress":
        yield (f"VIOLATED  {names} in round #{e.found_at} of seed {e.seed} (free-running: not "
               "replayable)")
    else:
        where = (f"schedule #{e.found_at} of seed {e.seed}" if e.choices in ("seeded", "pct")
                 else f"{e.choices} schedule #{e.found_at}")
        where = f"pct, {where}" if e.choices == "pct" else where
        shrunk = (f", shrunk to {e.shrunk_steps}" if e.original_steps is not None
                  and e.original_steps != e.shrunk_steps else "")
        steps = e.original_steps if e.original_steps is not None else e.shrunk_steps
        yield (f"VIOLATED  {names} after {counted(e.schedules_tried, 'schedule')} ({where}; "
               f"{counted(steps or 0, 'step')}{shrunk})")
    for check in broken:
        yield f"  promise broken ({check.name}): {check.promise}"
        yield from (f"    - {v.message}" for v in check.violations)
    if e.mode == "replay":
        return
    if e.schedule:
        yield (f"the race, in {counted(e.shrunk_steps or 0, 'step')} "
               f"({counted(e.timers, 'timer')}):")
        yield from _schedule(e)
    if e.replayed_identical is not None:
        yield "replayed once: " + ("identical" if e.replayed_identical else
                                   f"DIVERGED: {e.replay_divergence or 'no difference recorded'}")
    if e.mode == "stress":
        yield f"history and explanation: {e.repro_dir}"
        yield ("free-running threads cannot be replayed; for a schedule that replays, explore "
               "step by step: a service through its storage (--through redis://… or "
               "postgresql://…), a store without --stress")
        return
    if e.repro_dir:
        yield f"repro: {e.repro_dir}  (scenario.yaml, schedule.jsonl, history.jsonl, " \
              "explanation.txt)"
    if e.replay_command:
        yield f"replay: {e.replay_command}"
    if e.note:
        yield e.note


def certification_lines(c: Certification) -> Iterator[str]:
    link = c.failover or "-"
    sampled = f" [{c.sampling.calls} calls, k={c.sampling.k}]" if c.sampling else ""
    yield f"{c.verdict.upper():<11} {c.contract:<16} {c.provider:<22} {link:<7} {c.why}{sampled}"
    for s in c.statistics:
        if s.decision in ("broken", "unknown") or c.outcome in ("fail", "unknown"):
            yield f"    {s.name}: {s.text or f'{s.value:g}'}"
    if c.drift:
        since = c.drift_since[:16].replace("T", " ")
        yield (f"  drift since {since}" + (f" ({c.previous_verdict})" if c.previous_verdict
                                           else "") + ":")
        yield from (f"    {d.text or f'{d.field}: {d.previous} → {d.current}'}" for d in c.drift)
    if c.verdict != "eligible" and c.failover == "auto":
        yield (f"  {c.verdict} provider {c.provider!r} in an auto link for contract "
               f"{c.contract!r}: {c.why}")
    if c.fix and c.outcome in ("fail", "unknown"):
        yield f"  fix: {c.fix}"


def gate_lines(g: GateVerdict) -> Iterator[str]:
    for p in g.problems:
        yield f"{p.state.upper()}: provider {p.provider!r}, contract {p.contract!r}: {p.why}"
        yield f"  fix: {p.fix}"
    yield from (f"note: certified {fake}" for fake in g.fakes)
    if not g.links_checked:
        yield f"gate: no auto failover links in {g.providers_file}; nothing to certify"
    elif not g.problems:
        yield (f"gate: ok — {counted(g.links_checked, 'auto link')} certified at their current "
               f"config and contract ({g.lock_file})")
    else:
        counts: dict[str, int] = {}
        for p in g.problems:
            counts[p.state] = counts.get(p.state, 0) + 1
        summary = ", ".join(f"{n} {state}" for state, n in counts.items())
        yield (f"gate: {g.verdict} — {of(len(g.problems), g.links_checked, 'auto link')} not "
               f"certified ({summary})")


def brief_certification(c: Certification) -> Iterator[str]:
    """The verdict line, and the statistics only when the outcome fails or is unknown."""
    lines = list(certification_lines(c))
    yield lines[0]
    if c.outcome in ("fail", "unknown"):
        yield from lines[1:]


def replay_lines(r: ReplayComparison) -> Iterator[str]:
    if r.completed and r.identical is False and r.note.startswith("reproduced"):
        # what the user asked: did it happen again? Yes; where the history differs is a note
        yield r.note
        yield (f"  note: the {r.compared} differs from the recorded run ({r.divergence}): a "
               "live service or threads decide a race anew, the violation is the same")
        return
    if not r.completed:
        yield f"DIVERGED  {r.divergence}"
    elif r.identical is True:
        detail = (f"{counted(r.events, 'event')}, {counted(r.ops, 'op')}" if r.events
                  else counted(r.ops, "op"))
        yield f"{r.compared}: identical to the recorded run ({detail})"
    elif r.identical is False:
        yield f"{r.compared}: DIVERGED from the recorded run: {r.divergence}"
    if r.note:
        yield f"  ({r.note})"


def case_lines(c: Case) -> Iterator[str]:
    label = {"pass": "PASS", "fail": "FAILED", "unknown": "UNKNOWN", "skip": "SKIPPED"}
    yield f"{label[c.outcome]:<9} {c.suite}: {c.name}" + (f" — {c.message}" if c.message else "")
    yield from (f"    {d}" for d in c.details)
    if c.command and c.outcome in ("fail", "unknown"):
        yield f"  reproduce: {c.command}"


def drill_lines(d: DrillRun) -> Iterator[str]:
    label = JUDGED_LABEL[d.verdict]
    yield (f"{label:<9} drill {d.drill} on {d.target}: {d.description} "
           f"({counted(d.trials, 'intent')}, {counted(d.provider_calls, 'provider call')}, "
           f"{d.wall_s:.2f} s)")
    for p in d.promises:
        if p.broken or p.unknown:
            yield f"    {p.title}: {p.text}" + (f" — {p.example}" if p.example else "")
    for u in d.unknowns:
        yield f"    unknown: {u.reason}" + (f"\n      fix: {u.fix}" if u.fix else "")
    if d.drilled_again:  # the load left them without evidence: fresh intents in their place
        yield f"    {d.again_text} (the trials are judged by their last intent)"
    if d.command and d.verdict != "pass":
        yield f"  drill again: {d.command}"


RENDER: dict[type[Any], Callable[[Any], Iterator[str]]] = {
    ScenarioRun: scenario_lines, TrialSeries: series_lines, DetectionMatrix: matrix_lines,
    ExploreResult: explore_lines, Certification: certification_lines, GateVerdict: gate_lines,
    ReplayComparison: replay_lines, Case: case_lines, DrillRun: drill_lines,
}


def _worth_showing_quietly(event: Event) -> bool:
    return event.outcome in ("fail", "unknown") or isinstance(event, DetectionMatrix | GateVerdict)


class LiveOutput(Handler):
    """Prints each event as it comes, then the summary, the report folder and the verdict."""

    def __init__(self, stream: IO[str] | None = None, *, quiet: bool = False,
                 verbose: bool = False, folder: Callable[[], Any] | None = None) -> None:
        self.stream = stream
        self.quiet = quiet
        self.verbose = verbose
        self.not_applicable: list[ScenarioRun] = []
        self.folder = folder
        self.started = time.perf_counter()

    def _print(self, line: str) -> None:
        # Lines quote services, models and files: printed as text (escapes neutralised).
        print(bounded_lines(clean(line)), file=self.stream or sys.stdout, flush=True)

    def start(self, header: Header) -> None:
        self.started = time.perf_counter()

    def handle(self, event: Event) -> None:
        if self.quiet and not _worth_showing_quietly(event):
            return
        if not self.verbose and isinstance(event, ScenarioRun | TrialSeries):
            if isinstance(event, ScenarioRun) and event.verdict == "not_applicable":
                self.not_applicable.append(event)
                return
            render: Callable[[Any], Iterator[str]] = brief_lines
        elif not self.verbose and isinstance(event, Certification):
            render = brief_certification
        else:
            render = RENDER[type(event)]
        for line in render(event):
            self._print(line)

    def progress(self, text: str) -> None:
        if not self.quiet:
            self._print(text)

    def finish(self, results: Results) -> None:
        for line in not_applicable_lines(self.not_applicable):
            self._print(line)
        runs = results.of(ScenarioRun) + results.of(TrialSeries)
        judged = [r for r in runs if r.verdict != "not_applicable"]
        if self.verbose:
            pass
        elif len(judged) == 1 and judged[0].verdict in ("broken", "unknown"):
            # One run: its whole story fits; the headline was printed as it came.
            for line in list(RENDER[type(judged[0])](judged[0]))[1:]:
                self._print(line)
            for line in summary_lines(results, runs=False):
                self._print(line)
        else:
            for line in summary_lines(results):
                self._print(line)
        if len(runs) > 1 or results.of(TrialSeries):
            counts = {v: sum(1 for r in runs if r.verdict == v) for v in LABELS}
            self._print(f"{counted(len(runs), 'scenario')}: {counts['held']} passed, "
                        f"{counts['broken']} "
                        f"violated, {counts['unknown']} unknown, {counts['not_applicable']} not "
                        f"applicable ({time.perf_counter() - self.started:.2f} s)")
        for note in results.notes:
            self._print(note)
        folder = self.folder() if self.folder else None
        if folder is not None:
            self._print(f"report: {folder / 'index.html'} (also results.json, junit.xml, "
                        "summary.md)")
        self._print(f"{results.command}: {results.verdict.upper()} (exit {results.exit_code})")
