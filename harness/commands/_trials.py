"""Run scenario files against one target and emit their events: a scenario run each, or — for a
scenario with arrival patterns, or with ``--trials`` / ``--arrival`` — a trial series (N trials per
pattern, detection rates, the losers' histograms, and for every failure the run folder of the
trial that first showed it with the commands that reproduce it and measure its rate again).

``scenarios run`` and ``check --target`` share this. Run folders go inside the session's report
folder (``<report folder>/runs/<time>-<scenario>/``), so the folder a CI uploads holds what
``replay`` needs.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.providers.secrets import register_secret
from harness.reports.redaction import register_target_secrets, without_credentials
from harness.reports.session import ReportSession
from harness.scenarios.emit import first_unknown_runs, scenario_run, trial_series
from harness.scenarios.model import Scenario
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets.base import Target
from harness.scenarios.trials import TrialSet, run_trials


@dataclass(frozen=True)
class RunOptions:
    """How to run: the seed override, trials and patterns, and the options a replay repeats."""

    seed: int | None = None
    trials: int | None = None
    arrival: tuple[str, ...] | None = None
    target_text: str | None = None  # as the user wrote it (None: the default target)
    extra: list[str] = field(default_factory=list)  # --tokens-file / --target-profile


def target_secrets(target: Target, text: str | None) -> None:
    """Register the secrets a target holds (tokens, a DSN password) so no report shows them."""

    register_target_secrets(text)
    for token in (getattr(target, "tokens", None) or {}).values():
        register_secret(str(token))


def public_target(text: str) -> str:
    """The target as a printed command names it: no credentials (PGPASSWORD supplies them)."""
    return without_credentials(text)


def measure_command(ts: TrialSet, options: RunOptions, pattern: str | None) -> str:
    """The command that measures ``pattern``'s rate again (the same seeds, the same trials)."""
    words = ["failover-harness", "scenarios", "run", ts.scenario.source]
    if options.target_text:
        words += ["--target", public_target(ts.target)]
    words += options.extra
    if pattern is not None:
        words += ["--arrival", pattern]
    words += ["--trials", str(ts.trials), "--seed", str(ts.seed)]
    return " ".join(shlex.quote(w) for w in words)


def _replay(folder: Any, target: str, options: RunOptions) -> str:
    return replay_command(folder, public_target(target), options.extra)


def wants_trials(scenario: Scenario, options: RunOptions) -> bool:
    return bool(options.trials or options.arrival or scenario.arrival is not None)


def run_one(session: ReportSession, scenario: Scenario, target: Target,
            options: RunOptions) -> None:
    """Run ``scenario`` once and emit its scenario run (with a run folder unless not
    applicable)."""

    result = run_scenario(scenario, target, seed=options.seed)
    replay = None
    if result.status != "not_applicable":
        folder = write_run(result, session.folder, replay_extra=options.extra)
        replay = _replay(folder, result.target, options)
    session.emit(scenario_run(result, replay=replay))


def run_series(session: ReportSession, scenario: Scenario, target: Target,
               options: RunOptions) -> TrialSet:
    """Run the trials, write the first failing trial's run folder per failure, emit the
    series."""
    ts = run_trials(scenario, target, seed=options.seed, trials=options.trials,
                    patterns=options.arrival)
    replays: dict[str, str] = {}
    for failure, rates in ts.failures().items():
        first = max(rates.values(), key=lambda r: r.failed).first
        if first is None:
            continue
        if first.folder is None:
            write_run(first, session.folder, replay_extra=options.extra)
        replays[failure] = _replay(first.folder, first.target, options)
    unknown_replays: dict[int, str] = {}
    for run in first_unknown_runs(ts)[:3]:  # an unknown keeps its evidence too
        if run.folder is None:
            write_run(run, session.folder, replay_extra=options.extra)
        unknown_replays[id(run)] = _replay(run.folder, run.target, options)
    session.emit(trial_series(ts, replays=replays, unknown_replays=unknown_replays,
                              measure=lambda pattern: measure_command(ts, options, pattern)))
    return ts


def run_all(session: ReportSession, scenarios: Sequence[Scenario], target: Target,
            options: RunOptions) -> None:
    for scenario in scenarios:
        if wants_trials(scenario, options):
            run_series(session, scenario, target, options)
        else:
            run_one(session, scenario, target, options)
