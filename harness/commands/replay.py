"""``failover-harness replay``: run a recorded run folder (or a scenario file) again, following
its schedule, and report whether the history is identical or where it diverged.

Exit codes: the verdict's (0 holds, 1 violation, 3 unknown), 1 when the run diverged from the
recorded schedule, 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.scenarios import add_target_options, target_extra
from harness.console import echo
from harness.domain.errors import ConfigError

HELP = "Replay a run folder or scenario file; check the history is reproduced exactly."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, metavar="RUN_FOLDER_OR_SCENARIO",
                        help="a folder under reports/runs/ or reports/repro/ (explore), or a "
                        "scenario .yaml file")
    add_target_options(parser)
    from harness.commands.explore import add_through_options

    add_through_options(parser)  # an explore repro of a service explored through its storage
    parser.add_argument("--expect-identical", action="store_true",
                        help="exit 1 if the history differs from the recorded one "
                        "(e.g. in CI, to prove a recorded failure still reproduces)")


def run(args: argparse.Namespace) -> int:
    from harness.scenarios.render import exit_code, render_run
    from harness.scenarios.replay import recorded_target, replay
    from harness.scenarios.runfolder import replay_command, write_run
    from harness.scenarios.targets import open_target

    path: Path = args.path
    if not path.exists():
        raise ConfigError("no such run folder or scenario file", file=str(path),
                          fix="pass a folder under reports/runs/ or a scenario .yaml file")
    from harness.explore.repro import is_explore_repro

    if is_explore_repro(path):  # a repro folder written by `failover-harness explore`
        from harness.commands.explore import run_replay

        return run_replay(args)
    text = args.target or recorded_target(path)
    target = open_target(text, tokens_file=args.tokens_file, profile=args.target_profile)
    print(f"replaying {path} on {target.description}")
    try:
        outcome = replay(path, target, seed=args.seed)
    finally:
        target.close()
    if outcome.result is None:
        echo(f"DIVERGED  {outcome.divergence}")
        return 1
    result = outcome.result
    replayed = None
    if result.status != "not_applicable":
        folder = write_run(result, args.report_dir, replay_extra=target_extra(args))
        replayed = replay_command(folder, result.target, target_extra(args))
    for line in render_run(result, replay=replayed):
        echo(line)  # service text: printed as text (harness.console)
    if outcome.identical is True:
        print(f"history: identical to the recorded run ({len(result.history)} ops)")
    elif outcome.identical is False:
        echo(f"history: DIVERGED from the recorded run: {outcome.divergence}")
        if target.kind == "http":
            print("  (expected against a live service: its counters and retry timings differ "
                  "from run to run; compare the verdicts, which replay judges afresh)")
        if args.expect_identical:
            return 1
    if result.folder is not None:
        print(f"run folder: {result.folder}")
    return exit_code([result])
