"""``failover-harness replay``: run a recorded run folder (or a scenario file) again, following
its schedule, and report whether the history is identical or where it diverged.

Exit codes: the verdict's (0 holds, 1 violation, 3 unknown), 1 when the run diverged from the
recorded schedule, 2 bad input. A recorded failure that passes on replay (a race decided again by
threads or a live service) is 3, "not reproduced this time": not evidence of a fix.
``--until-violated N`` replays up to N times and stops at the first violation. Writes the report
folder like every judging command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._report import add_report_options, bound, play
from harness.commands.explore import add_through_options, run_replay
from harness.commands.scenarios import add_target_options, target_settings
from harness.domain.errors import ConfigError
from harness.explore.repro import is_explore_repro
from harness.scenarios.entry import ReplaySettings
from harness.scenarios.entry import run_replay as replay_run

HELP = ("Replay a run folder or a repro folder and check that the history is reproduced "
        "exactly")
EXITS = {
    0: "the replayed run holds every promise",
    1: "the violation was reproduced, or the run diverged from the recording",
    3: "a recorded failure did not show this time (not evidence of a fix)",
}
EXAMPLES = (
    ("run a failing trial again, on the target it failed on",
     "failover-harness replay reports/latest/runs/<run> --target http://127.0.0.1:8801"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, metavar="RUN_FOLDER_OR_SCENARIO",
                        help="a run folder (reports/<time>/runs/…) or an explore repro folder "
                        "(reports/<time>/repro/…), or a scenario .yaml file")
    add_target_options(parser)

    add_through_options(parser)  # an explore repro of a service explored through its storage
    parser.add_argument("--until-violated", type=int, default=1, metavar="N",
                        help="replay up to N times, stopping at the first violation (a race "
                        "may pass one replay); all N passing is exit 3, with the chance of that "
                        "if the race still happened at the recorded rate")
    parser.add_argument("--expect-identical", action="store_true",
                        help="exit 1 if the history differs from the recorded one "
                        "(e.g. in CI, to prove a recorded failure still reproduces)")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    path: Path = args.path
    if not path.exists():
        raise ConfigError("no such run folder or scenario file", file=str(path),
                          fix="pass a run folder (reports/<time>/runs/…) or a scenario .yaml "
                          "file")
    if is_explore_repro(path):  # a repro folder written by `failover-harness explore`
        return run_replay(args)
    settings = ReplaySettings(path=path, until_violated=args.until_violated,
                              expect_identical=args.expect_identical, **target_settings(args))
    return play(args, "replay", bound(replay_run, settings))
