"""``scenarios run`` in trial mode: N trials per arrival pattern, detection rates, and for every
failure the run folder of the trial that first showed it, with the commands that reproduce it.

Writes ``<report dir>/runs/<time>-<scenario>/`` for each such trial (``replay`` runs it again:
same seed, same schedule of arrivals) and ``<report dir>/trials/<time>-<scenario>.json`` with the
rates, the loser-answer histograms and the commands.
"""

from __future__ import annotations

import argparse
import json
import shlex
from datetime import UTC, datetime
from pathlib import Path

from harness.console import echo
from harness.scenarios.model import Scenario
from harness.scenarios.render_trials import render_trials, trials_document
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.targets.base import Target
from harness.scenarios.trials import TrialSet, run_trials


def measure_command(ts: TrialSet, args: argparse.Namespace, extra: list[str],
                    pattern: str | None) -> str:
    """The command that measures ``pattern``'s rate again (the same seeds, the same trials)."""
    words = ["failover-harness", "scenarios", "run", ts.scenario.source]
    if args.target:
        words += ["--target", ts.target]
    words += extra
    if pattern is not None:
        words += ["--arrival", pattern]
    words += ["--trials", str(ts.trials), "--seed", str(ts.seed)]
    return " ".join(shlex.quote(w) for w in words)


def run_trial_set(scenario: Scenario, target: Target, args: argparse.Namespace,
                  extra: list[str]) -> TrialSet:
    """Run the trials, write the folders and the summary, print the report; the trial set."""
    started = datetime.now(UTC)
    ts = run_trials(scenario, target, seed=args.seed, trials=args.trials, patterns=args.arrival)
    replays: dict[str, str] = {}
    folders: dict[str, str] = {}
    for failure, rates in ts.failures().items():
        first = max(rates.values(), key=lambda r: r.failed).first
        if first is None:
            continue
        if first.folder is None:
            write_run(first, args.report_dir, replay_extra=extra)
        folders[failure] = str(first.folder)
        replays[failure] = replay_command(first.folder, first.target, extra)

    def measure(pattern: str | None) -> str:
        return measure_command(ts, args, extra, pattern)

    for line in render_trials(ts, replays=replays, measure=measure):
        echo(line)  # service text: printed as text (harness.console)
    if ts.status != "not_applicable":
        summary = _summary_path(args.report_dir, scenario.name, started)
        document = trials_document(ts, replays=replays, folders=folders, measure=measure)
        summary.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                           encoding="utf-8")
        ts.folder = summary
        print(f"  rates: {summary}")
    return ts


def _summary_path(report_dir: Path, name: str, started: datetime) -> Path:
    folder = report_dir / "trials"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    candidate, n = folder / f"{stamp}-{name}.json", 2
    while candidate.exists():
        candidate, n = folder / f"{stamp}-{name}-{n}.json", n + 1
    return candidate
