"""Plain-text rendering of a trial set: detection rates per failure and pattern, the loser-answer
histogram per pattern, the first trial that showed each failure with its ops, and the commands
that reproduce it. Pure: returns strings (and the JSON summary)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.scenarios.checkers.losers import ordered
from harness.scenarios.history import pairs
from harness.scenarios.render import LABELS, _pairs_of, format_pair
from harness.scenarios.trials import SEQUENTIAL, TrialSet, failure_title

FORMAT = "failover-harness/trials-v1"
MAX_OPS_SHOWN = 12


def histogram_text(histogram: Mapping[str, int]) -> str:
    return ", ".join(f"{label} {n}" for label, n in ordered(dict(histogram))) or "—"  # type: ignore[arg-type]


def render_trials(
    ts: TrialSet,
    *,
    replays: Mapping[str, str] | None = None,
    measure: Callable[[str | None], str] | None = None,
) -> list[str]:
    """The lines for one trial set. ``replays``: checker → the command replaying the trial that
    first showed it; ``measure(pattern)``: the command measuring a pattern's rate again."""
    name = ts.scenario.name
    label = LABELS[ts.status]
    if ts.status == "not_applicable":
        return [f"{label:<9} {name}: {ts.reason}"]
    runs = len(ts.all_runs)
    lines = [f"{label:<9} {name}  ({len(ts.patterns)} pattern(s) × {ts.trials} trials: {runs} "
             f"runs in {ts.elapsed_s:.1f} s)"]
    first_run = ts.all_runs[0] if ts.all_runs else None
    if first_run is not None:
        lines.extend(f"  warning: {w}" for w in first_run.warnings)
    grouped = ts.patterns != (SEQUENTIAL,)
    width = max(len(p) for p in ts.patterns)
    for pattern in ts.patterns:
        total = len(ts.runs.get(pattern, []))
        line = f"  {pattern:<{width}}  {ts.violated(pattern):>3} of {total} trials broke a promise"
        if grouped:
            line += f"; loser answers: {histogram_text(ts.histogram(pattern))}"
            busy = ts.busy(pattern)
            if busy:
                line += ("; busy answers for requests that never ran: "
                         + ", ".join(f"{k} {n}" for k, n in sorted(busy.items())))
        lines.append(line)
    for failure, rates in ts.failures().items():
        checker, _, kind = failure.partition(":")
        lines.append(f"  FAILURE: {failure_title(failure)}  [{checker}]")
        lines.append(f"    promise: {ts.promise(checker)}")
        for pattern, rate in rates.items():
            shown = "" if pattern == SEQUENTIAL else f"{pattern}: "
            lines.append(f"    {shown}{rate.text}")
        first = max(rates.values(), key=lambda r: r.failed).first
        if first is None:
            continue
        trial = first.seed - ts.seed + 1
        where = "" if first.arrival is None else f"{first.arrival}, "
        lines.append(f"    first seen in {where}trial {trial} of {ts.trials} (seed {first.seed}):")
        all_pairs = pairs(first.history)
        for check in first.checks:
            if check.checker != checker:
                continue
            for violation in check.violations:
                if kind and violation.kind != kind:
                    continue
                lines.append(f"      - {violation.message}")
                shown_pairs = _pairs_of(violation.ops, all_pairs)
                lines.extend(f"          {format_pair(p)}" for p in shown_pairs[:MAX_OPS_SHOWN])
                if len(shown_pairs) > MAX_OPS_SHOWN:
                    lines.append(f"          … {len(shown_pairs) - MAX_OPS_SHOWN} more ops in the "
                                 "run folder")
        if replays and failure in replays:
            lines.append(f"    reproduce this trial: {replays[failure]}")
        if measure is not None:
            lines.append(f"    measure the rate again: {measure(first.arrival)}")
    for reason, n in sorted(ts.unknowns().items()):
        lines.append(f"  unknown ({n} of {runs} runs): {reason}")
    lines.extend(f"    fix: {fix}" for fix in ts.fixes() if ts.unknowns())
    return lines


def trials_document(
    ts: TrialSet,
    *,
    replays: Mapping[str, str] | None = None,
    folders: Mapping[str, str] | None = None,
    measure: Callable[[str | None], str] | None = None,
) -> dict[str, Any]:
    """The trial set as JSON: rates, histograms, unknowns and reproduction commands."""
    failures: dict[str, Any] = {}
    for failure, rates in ts.failures().items():
        checker, _, kind = failure.partition(":")
        first = max(rates.values(), key=lambda r: r.failed).first
        entry: dict[str, Any] = {
            "checker": checker,
            "kind": kind or None,
            "title": failure_title(failure),
            "promise": ts.promise(checker),
            "rates": {p: {"failed": r.failed, "trials": r.trials, "text": r.text}
                      for p, r in rates.items()},
        }
        if first is not None:
            entry["first"] = {
                "pattern": first.arrival, "trial": first.seed - ts.seed + 1, "seed": first.seed,
                "violations": [v.to_json() for c in first.checks if c.checker == checker
                               for v in c.violations if not kind or v.kind == kind],
                "run_folder": (folders or {}).get(failure),
                "replay": (replays or {}).get(failure),
                "measure": measure(first.arrival) if measure else None,
            }
        failures[failure] = entry
    return {
        "format": FORMAT,
        "scenario": ts.scenario.name,
        "scenario_file": ts.scenario.source,
        "status": ts.status,
        "reason": ts.reason,
        "target": ts.target,
        "seed": ts.seed,
        "trials": ts.trials,
        "elapsed_s": round(ts.elapsed_s, 3),
        "patterns": {p: {"violated": ts.violated(p), "trials": len(ts.runs.get(p, [])),
                         "loser_answers": dict(ordered(ts.histogram(p))),
                         "busy_answers": dict(sorted(ts.busy(p).items()))}
                     for p in ts.patterns},
        "failures": failures,
        "unknowns": dict(ts.unknowns()),
        "fixes": ts.fixes() if ts.unknowns() else [],
    }
