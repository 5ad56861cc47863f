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

from harness.commands._report import add_report_options, open_session
from harness.commands._trials import public_target, target_secrets
from harness.commands.explore import add_through_options, run_replay
from harness.commands.scenarios import add_target_options, target_extra
from harness.domain.errors import ConfigError
from harness.explore.repro import is_explore_repro
from harness.reports import ReplayComparison
from harness.scenarios.emit import scenario_run
from harness.scenarios.replay import recorded_target, replay_until, reproduction
from harness.scenarios.runfolder import read_run, replay_command, write_run
from harness.scenarios.targets import open_target

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
    if args.until_violated < 1:
        raise ConfigError(f"{args.until_violated} replays", field="--until-violated",
                          fix="write a number of replays from 1 (e.g. --until-violated 20)")
    text = args.target or recorded_target(path)
    if text is None:
        _refuse_another_target(path)
    target = open_target(text, tokens_file=args.tokens_file, profile=args.target_profile)
    try:
        target_secrets(target, text)
        session = open_session(args, "replay", targets=[target.description])
        session.say(f"replaying {path} on {target.description}")
        outcome, tries = replay_until(path, target, args.until_violated, seed=args.seed,
                                      say=session.say)
    finally:
        target.close()
    extra = target_extra(args)
    if outcome.result is None:
        session.emit(ReplayComparison(str(path), target.description, False, "fail",
                                      completed=False, divergence=outcome.divergence or ""))
        return session.finish()
    result = outcome.result
    replayed = None
    if result.status != "not_applicable":
        folder = write_run(result, session.folder, replay_extra=extra)
        replayed = replay_command(folder, public_target(result.target), extra)
    session.emit(scenario_run(result, replay=replayed))
    note = ""
    outcome_of_comparison = "pass"
    if outcome.identical is False and target.kind == "http":
        note = ("expected against a live service: its counters and retry timings differ "
                "from run to run; compare the verdicts, which replay judges afresh")
    found = reproduction(outcome, tries=tries)  # one run of a race is a draw: a pass is no fix
    if found is not None:
        outcome_of_comparison = found.outcome
        note = found.note + (f" ({note})" if note and found.outcome == "pass" else "")
    diverged = outcome.identical is False
    if diverged and args.expect_identical:
        outcome_of_comparison = "fail"
    session.emit(ReplayComparison(
        str(path), target.description, outcome.identical,
        outcome_of_comparison,  # type: ignore[arg-type]
        divergence=outcome.divergence or "", note=note, ops=len(result.history)))
    return session.finish()


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
