"""``failover-harness explore``: search real database races one SQL statement at a time, shrink
the first one found, and write a repro folder that ``failover-harness replay`` runs exactly.

Exit codes: 0 the budget was spent with no violation, 1 a violation (or, for replay, a run that
diverged from the recording), 2 bad input.
"""

from __future__ import annotations

import argparse
import secrets
from typing import Any

from harness.commands._report import add_report_options, bound, play
from harness.commands._shard import add_shard_option, shard_of
from harness.explore.entry import (
    CHOICES,
    DEFAULT_BUDGET,
    SERVICE_WORKLOADS,
    STORE_WORKLOADS,
    WORKLOADS,
    ExploreSettings,
    ReproReplaySettings,
    run_explore,
    run_repro_replay,
)

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
    parser.add_argument("--choices", choices=CHOICES,
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
    add_shard_option(parser, "the seed's schedules (a contiguous range each: seeded "
                     "choices with a --budget)")
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


def settings(args: argparse.Namespace) -> ExploreSettings:
    """The command line as the entry point's settings (a random seed when none is given)."""
    return ExploreSettings(
        seed=args.seed if args.seed is not None else secrets.randbelow(2**31),
        workload=args.workload, clients=args.clients, budget=args.budget,
        time_limit=args.time_limit, schedule=args.schedule, choices=args.choices,
        depth=args.depth, commit_steps=args.commit_steps, shrink=not args.no_shrink,
        stress=args.stress, shard=shard_of(args), **_through(args))


def _through(args: argparse.Namespace) -> dict[str, Any]:
    return {"target": args.target, "target_profile": args.target_profile,
            "tokens_file": args.tokens_file, "through": args.through, "listen": args.listen,
            "service_cmd": args.service_cmd, "health_path": args.health_path,
            "settle_ms": args.settle_ms}


def run(args: argparse.Namespace) -> int:
    return play(args, "explore", bound(run_explore, settings(args)))


def run_replay(args: argparse.Namespace) -> int:
    """``failover-harness replay <explore repro>``."""
    return play(args, "replay", bound(run_repro_replay, ReproReplaySettings(
        path=args.path, **_through(args))))
