"""``failover-harness check``: the main job, in one run and one report.

With ``--target URL[,URL…]`` (and ``--target-profile F``, ``--tokens-file F``), on the user's own
service: every shipped scenario the target's capabilities allow (the others are reported not
applicable, never passed), and the detection suite at its default trials (``--trials N``
overrides them). Without it, the self-check: the shipped scenarios against the reference store
and every mutant (the detection matrix), on the embedded SQLite store unless ``--db`` names
another database. Then, either way:

- certification of every provider the chains in ``providers.yaml`` name (the shipped example
  uses in-process fake providers, so this runs offline), written to ``providers.lock.json``;
- the gate's verdict on the auto-failover links.

A project file (``failover-harness.yaml`` beside ``providers.yaml``, or ``--project FILE``) may
hold the target, profile, tokens file, trials, scenario paths, seed and report folder, so CI
runs a bare ``failover-harness check``; command-line flags win.

Everything lands in the report folder ``reports/<UTC time>/`` (results.json, junit.xml,
summary.md, index.html, and the run folders of failures) with ``reports/latest`` pointing at it.
Exit 0 when everything holds, 1 on a violation (a scenario broken, a mutant not caught, an
ineligible auto link), 3 when nothing is broken but a verdict is unknown, 2 for bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.commands._drill_check import open_check_drill
from harness.commands._report import add_report_options, open_session
from harness.commands._trials import RunOptions, public_target, run_one, run_series, target_secrets
from harness.commands.scenarios import _load as load_scenarios
from harness.commands.scenarios import shipped_scenarios
from harness.console import console
from harness.contracts.certifier import certify, plan
from harness.contracts.emit import certification, gate_verdict
from harness.contracts.standing import certify_command
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.gateways.options import add_gateway_options, gateway_options
from harness.gateways.sources import audits_for, open_workspace, source_file
from harness.project import MAX_TRIALS, find_project, load_project
from harness.reports.redaction import register_target_secrets
from harness.scenarios.emit import detection_matrix, scenario_run
from harness.scenarios.matrix import REFERENCE
from harness.scenarios.matrix import detection_matrix as run_matrix
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.targets import TARGET_HELP, open_target
from harness.store.mutants import MUTANTS

HELP = ("Run the main job: scenarios on your service (or the reference store and its mutants), "
        "then certify and gate the providers")
EXAMPLES = (
    ("check your running service, described by a target profile",
     "failover-harness check --target http://127.0.0.1:8801 "
     "--target-profile examples/jobs.profile.yaml"),
    ("check the harness itself, offline (what the Quick start runs)", "failover-harness check"),
)
DEFAULT_PROVIDERS = Path("providers.yaml")


def configure(parser: argparse.ArgumentParser) -> None:
    service = parser.add_argument_group("your service")
    service.add_argument("--target", default=None, metavar="URL",
                         help=f"run the scenarios against this target instead of the reference "
                         f"store and its mutants: {TARGET_HELP}")
    service.add_argument("--target-profile", default=None, metavar="FILE",
                         help="a YAML profile mapping the operations onto your service's API")
    service.add_argument("--tokens-file", default=None, metavar="FILE",
                         help="YAML {token: owner} for your service (or $HARNESS_TOKENS)")
    service.add_argument("--trials", type=int, default=None, metavar="N",
                         help="trials per arrival pattern for the detection suite (default: "
                         "each scenario's arrival.trials)")
    parser.add_argument("--project", type=Path, default=None, metavar="FILE",
                        help="project file (default: failover-harness.yaml beside the providers "
                        "file, when there is one)")
    parser.add_argument("--providers", type=Path, default=None, metavar="FILE",
                        help="providers file to certify and gate (default: providers.yaml)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="contracts folder (default: contracts/ beside the providers file)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="lock file (default: providers.lock.json beside the providers file)")
    parser.add_argument("--scenarios", type=Path, nargs="*", default=None, metavar="PATH",
                        help="scenario files or folders, replacing the default: the shipped "
                        "scenarios (and the detection suite with --target), plus those of a "
                        "scenarios/ folder in the working directory")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="self-check only: the database for the scenario runs, "
                        "sqlite:///file.db or postgresql://… (default: a temporary SQLite file)")
    parser.add_argument("--seed", type=int, default=None, help="scenario seed override")
    parser.add_argument("--no-certify", action="store_true",
                        help="do not certify: gate on the lock file as it is")
    add_gateway_options(parser)  # --contract-map, --via, --header: for a gateway
    add_report_options(parser)


@dataclass(frozen=True)
class CheckSettings:
    """The command line over the project file (flags win)."""

    target: str | None
    target_profile: str | None
    tokens_file: str | None
    trials: int | None
    scenarios: tuple[Path, ...] | None
    seed: int | None
    providers: Path
    providers_explicit: bool


def settings(args: argparse.Namespace) -> CheckSettings:
    providers = args.providers or DEFAULT_PROVIDERS
    project = load_project(find_project(args.project, providers))
    if args.report_dir is None and project.report_dir is not None:
        args.report_dir = project.report_dir

    def first(flag: Any, value: Any) -> Any:
        return flag if flag is not None else value

    merged = CheckSettings(
        target=first(args.target, project.target),
        target_profile=first(args.target_profile, _str(project.target_profile)),
        tokens_file=first(args.tokens_file, _str(project.tokens_file)),
        trials=first(args.trials, project.trials),
        scenarios=tuple(args.scenarios) if args.scenarios else project.scenarios or None,
        seed=first(args.seed, project.seed),
        providers=providers,
        providers_explicit=args.providers is not None,
    )
    if merged.trials is not None and not 1 <= merged.trials <= MAX_TRIALS:
        raise ConfigError(f"{merged.trials} trials", field="--trials",
                          fix=f"give a whole number from 1 to {MAX_TRIALS}")
    if merged.target and args.db:
        raise ConfigError("--db chooses the database of the self-check; with --target the "
                          "scenarios run against your service", field="--db",
                          fix="drop --db, or drop --target")
    return merged


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def run(args: argparse.Namespace) -> int:
    s = settings(args)
    workspace = _open_workspace(args, s)  # bad config fails here, before any work
    if s.target:
        scenarios, suites = _suites(s, with_detection=True)
        target = open_target(s.target, tokens_file=s.tokens_file, profile=s.target_profile)
        drill = None
        try:
            target_secrets(target, s.target)
            # docs/drill.md; the fakes listen before the preflight's creates reach them
            drill = open_check_drill(s.target, s.target_profile, os.environ, target)
            target.preflight()  # out of reach, refusing an owner or every create: exit 2 now
            session = open_session(args, "check", targets=[target.description])
            session.say(f"check: {counted(len(scenarios), 'scenario')} against "
                        f"{target.description}; suites: {suites}")
            for warning in getattr(target, "warnings", ()):  # a profile's, said at load
                session.note(warning)
            if drill is None:
                _on_target(session, s, scenarios, target)
            else:  # both halves at once: timeouts, late results judged by the drill
                drill.run(session, lambda beside: _on_target(beside, s, scenarios, target),
                          s.trials)
        finally:
            target.close()
            if drill is not None:
                drill.close()
    else:
        register_target_secrets(args.db)
        scenarios, suites = _suites(s, with_detection=False)
        session = open_session(args, "check", targets=[args.db or "sqlite (embedded)"])
        session.say(f"check: {counted(len(scenarios), 'scenario')} on the reference store and its "
                    f"mutants; suites: {suites}")
        _self_check(session, args, s, scenarios)
    if workspace is None:
        session.note(f"no {s.providers}: certification and gate skipped")
    else:
        _certification(session, args, s, workspace)
    return session.finish()


def _load(paths: tuple[Path, ...] | list[Path]) -> list[Any]:
    return load_scenarios(list(paths))


def _suites(s: CheckSettings, *, with_detection: bool) -> tuple[list[Any], str]:
    """The scenarios to run, and the suites they come from, as the live output names them.

    The shipped scenarios (and, with ``--target``, the detection suite) always run; a
    ``scenarios/`` folder in the working directory adds its scenarios (and its ``detection/``),
    a local one named like a shipped one taking its place (``init`` copies the shipped ones:
    the user may have edited them). Only explicit paths (``--scenarios``, or the project file's
    ``scenarios:``) replace the shipped suites."""

    if s.scenarios:
        scenarios = _load(s.scenarios)
        named = ", ".join(str(p) for p in s.scenarios)
        return scenarios, f"{named} ({len(scenarios)}; given paths replace the shipped suites)"
    shipped = shipped_scenarios()
    suites: list[tuple[str, list[Any]]] = [("shipped", _load([shipped]))]
    if with_detection and (shipped / "detection").is_dir():
        suites.append(("detection", _load([shipped / "detection"])))
    local = Path("scenarios")
    if local.is_dir() and local.resolve() != shipped.resolve():
        extra = [local / "detection"] if with_detection and (local / "detection").is_dir() else []
        mine = _load([local, *extra])
        names = {m.name for m in mine}
        replaced = sum(1 for _, group in suites for x in group if x.name in names)
        suites = [(name, [x for x in group if x.name not in names]) for name, group in suites]
        note = f", {replaced} in place of shipped ones of the same name" if replaced else ""
        suites.append((f"local {local}/", mine))
        return [x for _, group in suites for x in group], ", ".join(
            f"{name} ({len(group)}{note if name.startswith('local') else ''})"
            for name, group in suites)
    return [x for _, group in suites for x in group], ", ".join(
        f"{name} ({len(group)})" for name, group in suites)


def _open_workspace(args: argparse.Namespace, s: CheckSettings) -> Any:
    optional = args.no_certify or (s.target and not s.providers_explicit)
    if optional and not source_file(s.providers).exists():
        return None

    return open_workspace(s.providers, args.contracts, args.lock, **gateway_options(args))


class _NoProgress:
    """Off a terminal (CI logs) there is no bar: not even the line a stopped bar prints."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def advance(self, task: Any, n: float = 1) -> None:
        return None


def _progress(label: str, total: int) -> Any:
    err = console(stderr=True)
    if not err.is_terminal:
        return _NoProgress(), 0
    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True)
    return progress, progress.add_task(label, total=total)


def in_detection_suite(scenario: Any) -> bool:
    """Judged by its rate over trials: it has arrival patterns, or it is in a detection/
    folder (the shipped detection suite)."""
    return scenario.arrival is not None or Path(scenario.source).parent.name == "detection"


def _on_target(session: Any, s: CheckSettings, scenarios: list[Any], target: Any) -> None:
    """Every scenario on the user's service; the detection suite as trial series, at its
    default trials (each scenario's ``arrival.trials``, else 1), or ``--trials``."""

    extra: list[str] = []
    if s.tokens_file:
        extra += ["--tokens-file", s.tokens_file]
    if s.target_profile:
        extra += ["--target-profile", s.target_profile]
    options = RunOptions(seed=s.seed, target_text=s.target, extra=extra)
    for scenario in scenarios:
        if in_detection_suite(scenario):
            run_series(session, scenario, target, replace(options, trials=s.trials))
        else:
            run_one(session, scenario, target, options)


def _self_check(session: Any, args: argparse.Namespace, s: CheckSettings,
                scenarios: list[Any]) -> None:
    progress, task = _progress("scenarios × stores", len(scenarios) * (1 + len(MUTANTS)))
    with progress:
        matrix = run_matrix(scenarios, args.db, seed=s.seed,
                            on_cell=lambda _store, _result: progress.advance(task))
    target = public_target(args.db or "sqlite")
    for scenario in scenarios:
        result = matrix.cells[(REFERENCE, scenario.name)]
        replay = None
        if result.status in ("violated", "unknown"):
            folder = write_run(result, session.folder)
            replay = replay_command(folder, target)
        session.emit(scenario_run(result, replay=replay))
    session.emit(detection_matrix(matrix))


def _certification(session: Any, args: argparse.Namespace, s: CheckSettings,
                   workspace: Any) -> None:
    failover: dict[tuple[str, str], str] = {}
    for contract, chain in workspace.providers.chains.items():
        for link in chain:
            failover[(link.provider, contract)] = link.failover
    if not args.no_certify:
        targets = plan(workspace.providers, workspace.contracts,
                       providers_path=str(s.providers))
        failover.update({(t.provider.id, t.contract.id): t.failover for t in targets})
        undecidable = workspace.undecidable([t.contract for t in targets])
        adaptive = any(c.adaptive_decides for c in undecidable)  # what would decide
        for check in undecidable:
            session.say(f"note: {check.text()}")
        total = sum(t.contract.thresholds.budget_for(len(t.contract.goldens)) if adaptive
                    else len(t.contract.goldens) * t.contract.thresholds.samples
                    for t in targets)
        # through a gateway: what the provider got, and what a config in a header makes it send
        audits = audits_for(workspace.providers, targets, workspace.providers_path)
        progress, task = _progress("certifying", total)
        with progress:
            result = asyncio.run(certify(targets, on_progress=lambda n: progress.advance(task, n),
                                         adaptive=adaptive, audits=audits))
        workspace.lock.commit(result.records)  # unreached: no evidence; under a file lock
        for record in result.records:
            link = failover.get(record.key, "")
            command = certify_command(record.provider, record.contract, str(s.providers),
                                      args.contracts and str(args.contracts), adaptive=adaptive,
                                      lock=args.lock and str(args.lock))
            fix = workspace.fix_for(record, command)
            session.emit(certification(record, link, fix=fix, gated=link == "auto"))
    session.emit(gate_verdict(workspace.gate(), lock_file=str(workspace.lock.path),
                              providers_file=str(s.providers)))
