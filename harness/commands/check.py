"""``failover-harness check``: the main job, in one run and one report.

With ``--target URL[,URL…]`` (and ``--target-profile F``, ``--tokens-file F``), on the user's own
service: every shipped scenario the target's capabilities allow (the others are reported not
applicable, never passed), and the detection suite at its default trials (``--trials N``
overrides them). Without it, the self-check: the shipped scenarios against the reference store
and every mutant (the detection matrix), on the embedded SQLite store unless ``--db`` names
another database. Then, either way:

- certification of the providers the chains in ``providers.yaml`` name where the lock file
  (``providers.lock.json``) has no current record for a link (new, its config or contract
  changed, or expired), or of all of them with ``--certify``; otherwise it gates on the lock and
  says so (the shipped example uses in-process fake providers, so this runs offline);
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
import os
from pathlib import Path
from typing import Any

from harness.campaign.check import CheckSettings, checked, run_check
from harness.commands._gateway import add_gateway_options, providers_source
from harness.commands._report import add_report_options, bound, play
from harness.commands._shard import add_shard_option, shard_of
from harness.project import find_project, load_project
from harness.scenarios.targets import TARGET_HELP

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
    certify = parser.add_mutually_exclusive_group()
    certify.add_argument("--certify", action="store_true",
                         help="certify every provider of the chains, even where the lock file "
                         "has a current record (default: only the links it has none for: new, "
                         "or whose config or contract changed, or expired)")
    certify.add_argument("--no-certify", action="store_true",
                         help="do not certify: gate on the lock file as it is")
    add_gateway_options(parser)  # --contract-map, --via, --header: for a gateway
    add_shard_option(parser, "the scenarios × stores (self-check) or scenarios × patterns × "
                     "trials (--target); shard 1 certifies and gates")
    add_report_options(parser)


def settings(args: argparse.Namespace) -> tuple[CheckSettings, Path | None]:
    """The command line over the project file (flags win), and the report folder's parent
    the project file names (None: --report-dir's)."""
    providers = args.providers or DEFAULT_PROVIDERS
    project = load_project(find_project(args.project, providers))

    def first(flag: Any, value: Any) -> Any:
        return flag if flag is not None else value

    return CheckSettings(
        target=first(args.target, project.target),
        target_profile=first(args.target_profile, _str(project.target_profile)),
        tokens_file=first(args.tokens_file, _str(project.tokens_file)),
        trials=first(args.trials, project.trials),
        scenarios=tuple(args.scenarios) if args.scenarios else project.scenarios or None,
        local=Path("scenarios") if Path("scenarios").is_dir() else None,
        seed=first(args.seed, project.seed),
        db=args.db,
        source=providers_source(args, providers),
        providers_explicit=args.providers is not None,
        certify="always" if args.certify else "never" if args.no_certify else "stale",
        env=dict(os.environ),
        shard=shard_of(args),
    ), project.report_dir


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def run(args: argparse.Namespace) -> int:
    check, project_reports = settings(args)
    return play(args, "check", bound(run_check, checked(check)), reports=project_reports)
