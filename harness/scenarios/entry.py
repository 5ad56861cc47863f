"""The scenario engine's entry points: ``scenarios run`` and ``replay`` of a run folder.

:func:`run_scenarios` runs scenario files against one target and yields their events: a
scenario run each, or — for a scenario with arrival patterns, or with ``trials`` / ``arrival``
— a trial series (N trials per pattern, detection rates, the losers' histograms, and for every
failure the run folder of the trial that first showed it, with the commands that reproduce it
and measure its rate again). :func:`run_replay` runs a recorded run folder (or a scenario file)
again, following its schedule. ``check`` plays its scenarios with :func:`scenario_events` too.

Run folders go into ``folder()`` (the report folder: ``<report folder>/runs/<time>-<scenario>/``),
so the folder a CI uploads holds what ``replay`` needs.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.domain.errors import ConfigError
from harness.domain.redaction import register_secret, register_target_secrets, without_credentials
from harness.domain.shard import Shard
from harness.domain.stream import QUIET, Begin, Folder, Live, Note, ShardEvidence, entry_point
from harness.domain.words import counted
from harness.providers.secrets import redact_dsn
from harness.scenarios.emit import detection_matrix as matrix_event
from harness.scenarios.emit import scenario_run
from harness.scenarios.events import ReplayComparison
from harness.scenarios.loader import load_scenario, scenario_files
from harness.scenarios.matrix import detection_matrix
from harness.scenarios.model import Scenario
from harness.scenarios.replay import recorded_target, replay_until, reproduction
from harness.scenarios.runfolder import read_run, replay_command, write_run
from harness.scenarios.runner import run_scenario
from harness.scenarios.series import (
    first_failing_runs,
    first_unknown_runs,
    series_evidence,
    series_head,
    series_of,
    trial_records,
)
from harness.scenarios.sharding import series_positions, sharded, unit
from harness.scenarios.targets import open_target
from harness.scenarios.targets.base import Target
from harness.scenarios.trials import TrialSet, run_trials


def shipped_scenarios() -> Path:
    """The scenarios shipped with the harness (a wheel carries them as
    ``harness/shipped/scenarios``; a checkout has them beside ``harness/``)."""
    package = Path(__file__).resolve().parents[1]
    shipped = package / "shipped" / "scenarios"
    return shipped if shipped.is_dir() else package.parent / "scenarios"


def load_scenarios(paths: Sequence[Path]) -> list[Scenario]:
    """Every scenario of ``paths`` (files or folders); two with one name is bad input."""
    scenarios = [load_scenario(f) for f in scenario_files(list(paths))]
    seen: dict[str, str] = {}
    for scenario in scenarios:
        if scenario.name in seen:
            raise ConfigError(
                f"scenario name {scenario.name!r} is also used by {seen[scenario.name]}",
                file=scenario.source, field="name", fix="give every scenario its own name",
            )
        seen[scenario.name] = scenario.source
    return scenarios


@dataclass(frozen=True, kw_only=True)
class TargetSettings:
    """The target a scenario runs against, as the user named it."""

    target: str | None = None  # None: the embedded SQLite store
    tokens_file: str | None = None  # HTTP targets: YAML {token: owner}
    target_profile: str | None = None  # HTTP targets: the service's target profile
    seed: int | None = None  # overrides each scenario's seed:
    shard: Shard | None = None  # --shard K/N: this job's part (None: the whole run, unstamped)

    @property
    def extra(self) -> tuple[str, ...]:
        """The options a replay command must repeat."""
        extra: list[str] = []
        if self.tokens_file:
            extra += ["--tokens-file", str(self.tokens_file)]
        if self.target_profile:
            extra += ["--target-profile", str(self.target_profile)]
        return tuple(extra)

    def open(self) -> Target:
        return open_target(self.target, tokens_file=self.tokens_file,
                           profile=self.target_profile)


@dataclass(frozen=True, kw_only=True)
class ScenariosSettings(TargetSettings):
    """``scenarios run``: the files, the target, the trials and arrival patterns."""

    paths: tuple[Path, ...]
    trials: int | None = None  # per arrival pattern (default: the scenario's arrival.trials)
    arrival: tuple[str, ...] | None = None  # burst, staggered, straddle


@dataclass(frozen=True, kw_only=True)
class ReplaySettings(TargetSettings):
    """``replay`` of a run folder or a scenario file."""

    path: Path
    until_violated: int = 1  # replay up to N times, stopping at the first violation
    expect_identical: bool = False  # a history that differs from the recording fails


@dataclass(frozen=True, kw_only=True)
class MatrixSettings:
    """``scenarios matrix``: the scenarios against the reference store and every mutant."""

    paths: tuple[Path, ...]
    db: str | None = None  # None: SQLite; else a PostgreSQL DSN
    seed: int | None = None


@entry_point
def run_matrix(settings: MatrixSettings, *, folder: Folder,
               live: Live = QUIET) -> Iterator[Any]:
    """The detection matrix: which scenario catches which mutant (and none the reference). The
    table and its problems are live lines; the matrix is the event."""
    matrix = detection_matrix(load_scenarios(settings.paths), settings.db, seed=settings.seed)
    yield Begin((redact_dsn(settings.db or "sqlite"),))
    live.say(matrix.render())
    runs = len(matrix.cells)
    live.say(f"{runs} runs in {matrix.elapsed_s:.2f} s "
             f"({runs / max(matrix.elapsed_s, 1e-9):.0f} scenarios/s)")
    problems = matrix.problems()
    for problem in problems:
        live.say(f"problem: {problem}")
    if not problems:
        live.say("every mutant is caught by at least one scenario; the reference by none")
    yield matrix_event(matrix)


def target_secrets(target: Target, text: str | None) -> None:
    """Register the secrets a target holds (tokens, a DSN password) so no report shows them."""
    register_target_secrets(text)
    for token in (getattr(target, "tokens", None) or {}).values():
        register_secret(str(token))


def public_target(text: str) -> str:
    """The target as a printed command names it: no credentials (PGPASSWORD supplies them)."""
    return without_credentials(text)


def opened(settings: TargetSettings) -> Target:
    """The target, its secrets registered and its preflight passed (exit 2 before any report:
    out of reach, or refusing an owner's token)."""
    target = settings.open()
    try:
        target_secrets(target, settings.target)
        target.preflight()
    except BaseException:
        target.close()
        raise
    return target


def target_notes(target: Target) -> Iterator[Note]:
    for warning in getattr(target, "warnings", ()):  # a profile's, said at load
        yield Note(warning)


@entry_point
def run_scenarios(settings: ScenariosSettings, *, folder: Folder,
                  live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness scenarios run``."""
    scenarios = load_scenarios(settings.paths)
    target = opened(settings)
    try:
        yield Begin(targets=(target.description,))
        if settings.shard is not None:
            yield sharded("scenarios run", settings.shard, settings,
                          [s.source for s in scenarios] + [settings.target_profile or ""],
                          order=[unit("scenario", s.name) for s in scenarios])
        live.say(f"target {target.description}; {counted(len(scenarios), 'scenario')}"
                 + (f"; shard {settings.shard}" if settings.shard else ""))
        yield from target_notes(target)
        yield from scenarios_events(scenarios, target, settings, folder,
                                    lambda s: (wants_trials(s, settings), None))
    finally:
        target.close()


def scenarios_events(scenarios: Sequence[Scenario], target: Target, settings: TargetSettings,
                     folder: Folder,
                     plan: Callable[[Scenario], tuple[bool, int | None]]) -> Iterator[Any]:
    """The events of ``scenarios`` in order (``plan``: whether a scenario runs as a trial
    series, and its trials), of the positions ``settings.shard`` owns."""
    base = 0
    for scenario in scenarios:
        trials, count = plan(scenario)
        yield from scenario_events(scenario, target, settings, folder, trials=trials,
                                   count=count, base=base)
        base += series_positions(scenario, trials=trials,
                                 count=count if count is not None
                                 else getattr(settings, "trials", None),
                                 arrival=getattr(settings, "arrival", None))


def wants_trials(scenario: Scenario, settings: ScenariosSettings) -> bool:
    return bool(settings.trials or settings.arrival or scenario.arrival is not None)


def scenario_events(scenario: Scenario, target: Target, settings: TargetSettings,
                    folder: Folder, *, trials: bool, count: int | None = None,
                    arrival: tuple[str, ...] | None = None, base: int = 0) -> Iterator[Any]:
    """One scenario's event: a scenario run (with a run folder unless not applicable), or a
    trial series (``count`` trials per pattern; default: the scenario's, or the settings').
    A shard runs the positions it owns from ``base`` on (none: no event), and records its
    trials beside its part of a series."""
    shard = settings.shard
    if trials:
        count = count if count is not None else getattr(settings, "trials", None)
        arrival = arrival if arrival is not None else getattr(settings, "arrival", None)
        owns = None if shard is None else (lambda n: shard.owns(base + n))
        positions = series_positions(scenario, trials=True, count=count, arrival=arrival)
        if owns is not None and not any(owns(n) for n in range(positions)):
            return
        yield from series_event(scenario, target, settings, folder, count, arrival, owns)
        return
    if shard is not None and not shard.owns(base):
        return
    result = run_scenario(scenario, target, seed=settings.seed)
    replay = None
    if result.status != "not_applicable":
        run_dir = write_run(result, folder(), replay_extra=list(settings.extra))
        replay = _replay(run_dir, result.target, settings)
    yield scenario_run(result, replay=replay)


def measure_command(ts: TrialSet, settings: TargetSettings, pattern: str | None) -> str:
    """The command that measures ``pattern``'s rate again (the same seeds, the same trials)."""
    words = ["failover-harness", "scenarios", "run", ts.scenario.source]
    if settings.target:
        words += ["--target", public_target(ts.target)]
    words += settings.extra
    if pattern is not None:
        words += ["--arrival", pattern]
    words += ["--trials", str(ts.trials), "--seed", str(ts.seed)]
    return " ".join(shlex.quote(w) for w in words)


def _replay(run_dir: Any, target: str, settings: TargetSettings) -> str:
    return replay_command(run_dir, public_target(target), list(settings.extra))


def series_event(scenario: Scenario, target: Target, settings: TargetSettings, folder: Folder,
                 trials: int | None, arrival: tuple[str, ...] | None,
                 owns: Callable[[int], bool] | None = None) -> Iterator[Any]:
    """Run the trials (a shard: those it ``owns``), write the run folder of the first failing
    trial of each failure (a shard: of each failure and pattern, any may be the one the merged
    series shows) and of the first few unknowns; the series (a shard: and its trials' records).
    """
    ts = run_trials(scenario, target, seed=settings.seed, trials=trials, patterns=arrival,
                    owns=owns)
    kept = first_failing_runs(ts) if owns is not None else [
        first for rates in ts.failures().values()
        if (first := max(rates.values(), key=lambda r: r.failed).first) is not None]
    unknowns = first_unknown_runs(ts)
    kept += unknowns if owns is not None else unknowns[:3]  # an unknown keeps its evidence too
    replays: dict[int, str] = {}
    for run in kept:
        if run.folder is None:
            write_run(run, folder(), replay_extra=list(settings.extra))
        replays[id(run)] = _replay(run.folder, run.target, settings)
    records = trial_records(ts, replays=replays,
                            measure=lambda pattern: measure_command(ts, settings, pattern))
    yield series_of(series_head(ts), records, wall_s=ts.elapsed_s)
    if settings.shard is not None:
        yield ShardEvidence(series_evidence(ts, records))


@entry_point
def run_replay(settings: ReplaySettings, *, folder: Folder, live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness replay`` of a run folder or a scenario file: the replayed run, and
    how it compares with the recording."""
    path = settings.path
    if settings.until_violated < 1:
        raise ConfigError(f"{settings.until_violated} replays", field="--until-violated",
                          fix="write a number of replays from 1 (e.g. --until-violated 20)")
    text = settings.target or recorded_target(path)
    if text is None:
        _refuse_another_target(path)
    target = replace(settings, target=text).open()
    try:
        target_secrets(target, text)
        yield Begin(targets=(target.description,))
        live.say(f"replaying {path} on {target.description}")
        outcome, tries = replay_until(path, target, settings.until_violated, seed=settings.seed,
                                      say=live.say)
    finally:
        target.close()
    if outcome.result is None:
        yield ReplayComparison(str(path), target.description, False, "fail",
                               completed=False, divergence=outcome.divergence or "")
        return
    result = outcome.result
    replayed = None
    if result.status != "not_applicable":
        run_dir = write_run(result, folder(), replay_extra=list(settings.extra))
        replayed = _replay(run_dir, result.target, settings)
    yield scenario_run(result, replay=replayed)
    note = ""
    compared = "pass"
    if outcome.identical is False and target.kind == "http":
        note = ("expected against a live service: its counters and retry timings differ "
                "from run to run; compare the verdicts, which replay judges afresh")
    found = reproduction(outcome, tries=tries)  # one run of a race is a draw: a pass is no fix
    if found is not None:
        compared = found.outcome
        note = found.note + (f" ({note})" if note and found.outcome == "pass" else "")
    if outcome.identical is False and settings.expect_identical:
        compared = "fail"
    yield ReplayComparison(
        str(path), target.description, outcome.identical, compared,  # type: ignore[arg-type]
        divergence=outcome.divergence or "", note=note, ops=len(result.history))


def _refuse_another_target(path: Path) -> None:
    """A run folder whose target cannot be rebuilt from the folder (an HTTP service: its tokens
    and profile are not stored; a database whose password was removed) is never replayed on
    another target (the reference SQLite store would say PASS): exit 2 naming the target."""
    if not path.is_dir():
        return  # a scenario file: the default target is the user's choice

    recorded = str(read_run(path).results.get("target", "") or "")
    if not recorded or recorded == "sqlite":
        return
    shown = recorded.replace(":***@", "@")
    extra = (" with the --tokens-file (and --target-profile) it ran with"
             if recorded.startswith(("http://", "https://")) else
             " (the password from PGPASSWORD or ~/.pgpass)")
    raise ConfigError(
        f"this run ran on {shown}, which replay cannot rebuild from the run folder",
        file=str(path), field="--target",
        fix=f"pass --target {shown}{extra}: replaying it on another target would judge "
            "another system")
