"""``failover-harness scenarios``: run scenario files against a target, list them, or print the
detection matrix (every scenario × the reference store and every mutant).

Exit codes: 0 every promise holds (not applicable allowed), 1 a violation, 2 bad input or
configuration, 3 no violation but some verdict unknown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.commands._help import describe
from harness.commands._report import add_report_options, bound, play
from harness.commands._shard import add_shard_option, shard_of
from harness.scenarios.entry import (
    MatrixSettings,
    ScenariosSettings,
    load_scenarios,
    run_matrix,
    run_scenarios,
    shipped_scenarios,
)
from harness.scenarios.model import ARRIVAL_PATTERNS, Scenario
from harness.scenarios.targets import TARGET_HELP

HELP = "Run, list or cross-check scenario files against a store or a service"
EXAMPLES = (
    ("run one scenario against a mutant store",
     "failover-harness scenarios run --target mutant:last-write-wins "
     "scenarios/out_of_order_completion.yaml"),
    ("list the scenarios, validating each file", "failover-harness scenarios list"),
)



PATHS_HELP = "scenario files or folders (default: scenarios/, else the shipped ones)"


def default_scenarios() -> Path:
    """``scenarios/`` of the working directory, else the ones shipped with the harness."""
    folder = Path("scenarios")
    return folder if folder.is_dir() else shipped_scenarios()


def add_target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=None, help=f"what to attack: {TARGET_HELP}")
    parser.add_argument(
        "--tokens-file", default=None, metavar="FILE",
        help="HTTP targets: YAML {token: owner}, the file serve takes (or $HARNESS_TOKENS)",
    )
    parser.add_argument(
        "--target-profile", default=None, metavar="FILE",
        help="HTTP targets: a YAML profile mapping the operations onto another service's API",
    )
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for the choices between simultaneous events "
                        "(default: the scenario's seed:, else 0)")


def target_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The target options as :class:`~harness.scenarios.entry.TargetSettings` fields."""
    return {"target": args.target, "tokens_file": args.tokens_file,
            "target_profile": args.target_profile, "seed": args.seed}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    run = sub.add_parser("run", help="Run scenarios against a target and judge their histories")
    describe(run, "Run scenarios against a target, judge their histories and write run folders",
             ((("run the detection suite against a service, 20 trials per arrival pattern",
                "failover-harness scenarios run scenarios/detection --trials 20 --target "
                "http://127.0.0.1:8802 --target-profile examples/jobs.profile.yaml"),
               ("run one scenario against a mutant store", "failover-harness scenarios run "
                "--target mutant:last-write-wins scenarios/out_of_order_completion.yaml"))))
    run.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=PATHS_HELP)
    add_target_options(run)
    run.add_argument("--trials", type=_positive, default=None, metavar="N",
                     help="run each scenario N times per arrival pattern and report detection "
                     "rates (default: the scenario's arrival.trials, else 1)")
    run.add_argument("--arrival", type=_patterns, default=None, metavar="PATTERNS",
                     help="arrival patterns of concurrent duplicates, comma-separated: burst, "
                     "staggered, straddle (default: the scenario's arrival.patterns, else burst)")
    add_shard_option(run, "the scenarios × arrival patterns × trials")
    add_report_options(run)
    listing = sub.add_parser("list", help="Validate scenario files and list them")
    describe(listing, "Validate scenario files and list them, with what each needs",
             (("list the shipped scenarios", "failover-harness scenarios list"),),
             {0: "every file is valid"})
    listing.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                         help=PATHS_HELP)
    matrix = sub.add_parser("matrix", help="Run every scenario against the reference store "
                            "and each mutant")
    describe(matrix, "Run every scenario against the reference store and each mutant: each "
             "mutant must be caught, the reference by none",
             (("the detection matrix on SQLite", "failover-harness scenarios matrix"),
              ("…on your PostgreSQL", "failover-harness scenarios matrix --db "
               "postgresql://postgres@127.0.0.1:5432/postgres")),
             {0: "every mutant caught, the reference by none",
              1: "a mutant missed, or the reference flagged"})
    matrix.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=PATHS_HELP)
    matrix.add_argument("--db", default=None, metavar="URL",
                        help="sqlite:///file.db or postgresql://… shared by all runs "
                        "(default: a temporary SQLite file)")
    matrix.add_argument("--seed", type=int, default=None,
                        help="seed for the choices between simultaneous events, the same for "
                        "every run (default: each scenario's seed:, else 0)")
    add_report_options(matrix)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: write a whole number from 1 to 1000")
    return value


def _patterns(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    wrong = [p for p in chosen if p not in ARRIVAL_PATTERNS]
    if wrong or not chosen:
        raise argparse.ArgumentTypeError(
            f"{', '.join(wrong) or text!r}: write one or more of {', '.join(ARRIVAL_PATTERNS)}, "
            "comma-separated")
    return chosen


def _load(paths: list[Path]) -> list[Scenario]:
    return load_scenarios(paths or [default_scenarios()])


def run(args: argparse.Namespace) -> int:
    if args.action == "run":
        return _run(args)
    if args.action == "list":
        return _list(args)
    if args.action == "matrix":
        return _matrix(args)
    print("usage: failover-harness scenarios {run,list,matrix} …  (see --help)", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    settings = ScenariosSettings(paths=tuple(args.paths or [default_scenarios()]),
                                 trials=args.trials, arrival=args.arrival,
                                 shard=shard_of(args), **target_settings(args))
    return play(args, "scenarios run", bound(run_scenarios, settings))


def _list(args: argparse.Namespace) -> int:
    for scenario in _load(args.paths):
        needs = ", ".join(sorted(scenario.requires))
        print(f"{scenario.name:<30} {len(scenario.steps):>2} steps  {scenario.duration:>5g} s  "
              f"needs {needs}")
        print(f"    checkers: {', '.join(scenario.checkers)}")
    return 0


def _matrix(args: argparse.Namespace) -> int:
    settings = MatrixSettings(paths=tuple(args.paths or [default_scenarios()]), db=args.db,
                              seed=args.seed)
    return play(args, "scenarios matrix", bound(run_matrix, settings))
