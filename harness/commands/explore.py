"""``failover-harness explore``: search real database races one SQL statement at a time, shrink
the first one found, and write a repro folder that ``failover-harness replay`` runs exactly.

Exit codes: 0 the budget was spent with no violation, 1 a violation (or, for replay, a run that
diverged from the recording), 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
from typing import TYPE_CHECKING

from harness.commands._explore_found import Ticker, report_clean, report_violation
from harness.commands._explore_through import replay_through, run_through
from harness.commands._report import add_report_options, open_session
from harness.domain.errors import ConfigError, MissingExtra
from harness.explore.controller import Controller
from harness.explore.emit import explore_result
from harness.explore.replay import replay_repro
from harness.explore.repro import read_repro, write_repro
from harness.explore.search import SearchSettings, search
from harness.explore.stress import stress
from harness.explore.target import explore_store
from harness.reports import ReplayComparison
from harness.scenarios.targets import open_target

if TYPE_CHECKING:
    from harness.explore.replay import Replayed
    from harness.reports.session import ReportSession

HELP = ("Find, shrink and replay races in your service (through its Redis or PostgreSQL) "
        "or in a store, one step at a time")
EXITS = {
    0: "the budget was spent with no violation, every promise exercised",
    1: "a violation (or, for a replay, a run that diverged from the recording)",
    3: "no violation, but a promise no schedule exercised",
}
EXAMPLES = (
    ("find a race in a mutant store", "failover-harness explore --target "
     "mutant:check-then-insert --workload double-click --budget 200"),
    ("find a race in a service through its Redis, starting the service with this Python",
     "failover-harness explore --target http://127.0.0.1:8811 --target-profile "
     "examples/redis-lock.profile.yaml --through redis://127.0.0.1:6379/0 --choices pct "
     "--service-cmd \"python examples/redis_lock_service.py --port 8811 --redis {proxy}\""),
)
STORE_WORKLOADS = ("double-click", "mismatch", "claims", "timeouts", "all")
SERVICE_WORKLOADS = ("double-click", "mismatch", "handler-failure", "all")
WORKLOADS = ("double-click", "mismatch", "claims", "timeouts", "handler-failure", "all")
DEFAULT_BUDGET = 500


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=None,
                        help="your service: http://host:port with --through (and usually "
                        "--target-profile); or a store: sqlite (default: a temporary file), "
                        "sqlite:///file.db, postgresql://…, mutant:<name>[@<db url>]")
    add_through_options(parser)
    parser.add_argument("--workload", choices=WORKLOADS, default="all",
                        help="which races to look for (default: all, one drawn per schedule); "
                        f"a service: {', '.join(SERVICE_WORKLOADS[:-1])}; a store: "
                        f"{', '.join(STORE_WORKLOADS[:-1])}")
    parser.add_argument("--clients", type=int, default=3, metavar="N",
                        help="at most N clients send creates at once; readers join up to N-2 "
                        "(2..16, default 3)")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=int, default=None, metavar="N",
                       help=f"explore N schedules (default {DEFAULT_BUDGET})")
    limit.add_argument("--time-limit", type=float, default=None, metavar="S",
                       help="explore for S seconds instead")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed (default: a random one, printed first)")
    parser.add_argument("--schedule", type=int, default=0, metavar="N",
                        help="start at schedule N of the seed (--budget 1 reruns just that one)")
    parser.add_argument("--choices", choices=("seeded", "pct", "exhaustive", "hypothesis"),
                        default="seeded", help="seeded: swarm-style random (default); "
                        "pct: probabilistic concurrency testing (--depth; its probability "
                        "bound is printed); exhaustive: every interleaving of each workload's "
                        "smallest plan; hypothesis: Hypothesis draws plans and decisions")
    parser.add_argument("--depth", type=int, default=2, metavar="D",
                        help="--choices pct: the bug depth (ordering constraints) to aim for "
                        "(1..5, default 2)")
    parser.add_argument("--commit-steps", action="store_true",
                        help="make each write transaction's COMMIT a step of its own (deeper: "
                        "others may run, and wait, while it is open after its last statement)")
    parser.add_argument("--no-shrink", action="store_true",
                        help="write the failing schedule as found")
    parser.add_argument("--stress", action="store_true",
                        help="free-running threads (no controller): checked, not replayable; "
                        "for services explore cannot see inside")
    parser.add_argument("--tokens-file", default=None, metavar="FILE",
                        help="HTTP targets: YAML {token: owner} (or $HARNESS_TOKENS)")
    add_report_options(parser)


def add_through_options(parser: argparse.ArgumentParser) -> None:
    """The options that put a proxy between a service and its storage (explore and replay)."""
    group = parser.add_argument_group("your service, through its storage")
    group.add_argument("--through", default=None, metavar="URL",
                       help="the storage your service uses: redis://HOST:PORT[/DB] or "
                       "postgresql://USER@HOST:PORT/DB; a gating proxy stands in front of it "
                       "and the service must connect to the proxy instead")
    group.add_argument("--listen", default=None, metavar="HOST:PORT",
                       help="where the proxy listens (default: a free loopback port, printed)")
    group.add_argument("--service-cmd", default=None, metavar="CMD",
                       help="start the service after the proxy is up ({proxy} in CMD becomes "
                       "the proxy's URL, also in $HARNESS_PROXY_URL; {python} or a leading "
                       "'python' is the harness's own interpreter); stopped at the end")
    group.add_argument("--health-path", default="/healthz", metavar="PATH",
                       help="waited for (any answer below 500) before the first schedule "
                       "(default /healthz)")
    group.add_argument("--settle-ms", type=float, default=None, metavar="MS",
                       help="how long to wait for a request to reach the proxy or be answered "
                       "before choosing anyway (recorded: replay says 'nondeterministic "
                       "here'); default 100")
    if not any(a.dest == "target_profile" for a in parser._actions):
        group.add_argument("--target-profile", default=None, metavar="FILE",
                           help="the service's target profile (its API and promises)")


def _settings(args: argparse.Namespace, seed: int) -> SearchSettings:
    if not 2 <= args.clients <= 16:
        raise ConfigError(f"{args.clients} is out of range", field="--clients",
                          fix="use 2 to 16 clients")
    if args.budget is not None and args.budget < 1:
        raise ConfigError(f"{args.budget} schedules explore nothing", field="--budget",
                          fix="give at least 1 schedule")
    if args.time_limit is not None and args.time_limit <= 0:
        raise ConfigError(f"{args.time_limit:g} is not a duration",
                          field="--time-limit", fix="give a number of seconds above 0")
    if args.schedule < 0:
        raise ConfigError(f"{args.schedule} is not a schedule number", field="--schedule",
                          fix="schedules are numbered from 0")
    if args.stress and args.commit_steps:
        raise ConfigError("--stress has no controller, so there are no steps to split",
                          field="--commit-steps", fix="drop --commit-steps, or drop --stress")
    if args.stress and args.choices != "seeded":
        raise ConfigError(f"--stress has no controller, so {args.choices} choices cannot "
                          "apply", field="--choices", fix="drop --choices, or drop --stress")
    if args.choices == "hypothesis":
        _need_hypothesis()
    if not 1 <= args.depth <= 5:
        raise ConfigError(f"depth {args.depth} is out of range", field="--depth",
                          fix="use 1 to 5 (2: one preemption, the common race)")
    through = getattr(args, "through", None)
    if through and (args.stress or args.commit_steps):
        flag = "--stress" if args.stress else "--commit-steps"
        raise ConfigError(f"{flag} does not apply to a service explored through its storage",
                          field=flag, fix=f"drop {flag}")
    usable = SERVICE_WORKLOADS if through else STORE_WORKLOADS
    if not args.stress and args.workload not in usable:
        what = "a service explored through its storage" if through else "a store"
        raise ConfigError(f"workload {args.workload!r} does not apply to {what}",
                          field="--workload", fix=f"use one of: {', '.join(usable)}")
    budget = args.budget if args.budget is not None or args.time_limit else DEFAULT_BUDGET
    return SearchSettings(workload=args.workload, clients=args.clients, budget=budget,
                    time_limit=args.time_limit, seed=seed, choices=args.choices,
                    first=args.schedule, depth=args.depth)


def _need_hypothesis() -> None:
    """``--choices hypothesis`` is the one explore path that needs the ``explore`` extra (the
    seeded, PCT and exhaustive searches and the shrinker run without it): say so up front."""

    if importlib.util.find_spec("hypothesis") is None:
        raise MissingExtra("explore", module="hypothesis",
                           purpose="explore --choices hypothesis (Hypothesis draws the schedules; "
                           "--choices seeded, pct and exhaustive need no extra)")


def run(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    settings = _settings(args, seed)
    session = open_session(args, "explore")
    session.say(f"explore: seed {seed}")
    if args.through:
        return run_through(args, settings, session)
    if args.stress:
        return _stress(args, settings, session)

    limit = (f"{settings.budget} schedules" if settings.budget is not None
             else f"{settings.time_limit:g} s")
    with explore_store(args.target) as (store, target):
        session.add_target(target)
        session.say(f"target {target}; workload {settings.workload}; clients ≤ "
                    f"{settings.clients}; budget {limit}; {settings.choices} choices")
        with Controller(store, commit_steps=args.commit_steps) as controller:
            ticker = Ticker(session.say, settings.budget)
            found = search(controller, settings, ticker)
            ticker.final()
            if found.outcome is None:
                report_clean(session, found, settings, target)
            else:
                report_violation(session, controller, found, settings, target, args)
    return session.finish()


def _stress(args: argparse.Namespace, settings: SearchSettings, session: ReportSession) -> int:
    target = open_target(args.target, tokens_file=args.tokens_file)
    session.add_target(target.description)
    limit = (f"{settings.budget} rounds" if settings.budget is not None
             else f"{settings.time_limit:g} s")
    try:
        session.say(f"stress: target {target.description}; workload {settings.workload}; "
                    f"clients ≤ {settings.clients}; {limit}; free-running threads (not "
                    "replayable)")
        ticker = Ticker(session.say)
        found = stress(target, settings, ticker)
        ticker.final()
    finally:
        target.close()
    if found.outcome is None:
        session.emit(explore_result(
            None, target=target.description, settings=settings, found=found, mode="stress",
            note="\n".join([f"no violation in {found.progress.schedules} rounds",
                            *found.progress.tally.lines("rounds")])))
        return session.finish()
    folder = write_repro(found.outcome, session.folder, target=target.description,
                         found={"workload": settings.workload, "seed": settings.seed,
                                "schedule": found.schedule, "choices": "stress",
                                "schedules": found.progress.schedules},
                         replayable=False)
    session.emit(explore_result(found.outcome, target=target.description, settings=settings,
                                found=found, mode="stress", repro=folder))
    return session.finish()


def run_replay(args: argparse.Namespace) -> int:
    """``failover-harness replay <explore repro>``: the same events and history, or where not."""

    repro = read_repro(args.path)
    if repro.through is not None or getattr(args, "through", None):
        session = open_session(args, "replay")
        replayed, target = replay_through(args, repro, session)
        return _replayed(session, args, replayed, target)
    text = args.target or repro.target
    if text and "***" in text and not args.target:
        raise ConfigError("the repro's target URL had its password removed", field="--target",
                          fix="pass --target with the full URL (or set PGPASSWORD)")
    session = open_session(args, "replay")
    with explore_store(text) as (store, target):
        session.add_target(target)
        session.say(f"replaying {args.path} on {target} ({len(repro.decisions)} recorded "
                    "decisions)")
        with Controller(store, commit_steps=repro.commit_steps) as controller:
            replayed = replay_repro(controller, repro)
    return _replayed(session, args, replayed, target)


def _replayed(session: ReportSession, args: argparse.Namespace, replayed: Replayed,
              target: str) -> int:
    outcome = replayed.outcome
    settings = argparse.Namespace(workload=outcome.plan.workload, seed=0, choices="replay")
    session.emit(explore_result(outcome, target=target, settings=settings, mode="replay"))
    what = "schedule and history" if replayed.compared else "schedule"
    if replayed.divergence is not None:
        session.emit(ReplayComparison(
            str(args.path), target, False, "fail", compared=what, completed=False,
            divergence=replayed.divergence,
            note=f"following the recording where it still could, the verdict is now "
                 f"{outcome.status}", ops=len(outcome.history)))
    else:
        session.emit(ReplayComparison(str(args.path), target, True, "pass", compared=what,
                                      ops=len(outcome.history), events=len(outcome.schedule)))
    return session.finish()
