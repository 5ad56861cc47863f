"""Explore benchmark: schedules/s and steps/s per workload, time to the first violation per mutant.

    python -m bench.explore [--schedules 300] [--seeds 5] [--pg postgresql://…]
                            (PostgreSQL also from HARNESS_PG_DSN; a scratch database
                             harness_bench_explore is created and dropped)

Prints, measured in the same run, on SQLite and (given a DSN) PostgreSQL:
- per workload, explored schedules/s and steps/s on the reference store, against a baseline:
  the same plans with every operation run one after another on one thread (no workers, no
  gates) — the ratio is what interleaving statement by statement costs;
- per mutant, the time to the first violation (median of ``--seeds`` seeds; the search only,
  shrinking reported apart), against a baseline: ``--stress`` (free-running threads, the
  mutants' own timed rendezvous) on the same seeds, capped at 300 rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from harness.domain.clock import EPOCH, ManualClock
from harness.explore.controller import Controller
from harness.explore.ops import Executor
from harness.explore.plan import Plan, RandomDraw
from harness.explore.search import Settings, search
from harness.explore.shrink import shrink
from harness.explore.stress import stress
from harness.explore.target import explore_store
from harness.explore.workloads import WORKLOADS, build_plan
from harness.scenarios.checkers import run_checkers
from harness.scenarios.history import History
from harness.scenarios.targets import open_target
from harness.scenarios.targets.base import SequentialIds
from harness.scenarios.targets.stores import StoreSession
from harness.store.sqlstore import SqlStore

MUTANT_WORKLOADS = {
    "check-then-insert": "double-click",
    "no-fingerprint": "mismatch",
    "last-write-wins": "claims",
    "cancelled-can-win": "claims",
    "timeout-marks-failed": "timeouts",
    "no-attempt-gate": "timeouts",
    "owner-leak": "double-click",
}
STRESS_CAP = 300


def sequential(store: SqlStore, plan: Plan, tag: str) -> int:
    """The baseline: ``plan``'s operations one after another on this thread; ops run."""
    clock = ManualClock(EPOCH)
    store.clock, store.ids = clock, SequentialIds(tag)
    history = History(now=lambda: (0.0, "w"))
    executor = Executor(plan, StoreSession(store), tag, history)
    ops = [*plan.setup]
    for name in sorted(plan.clients):
        ops += plan.clients[name]
    for timer in sorted(plan.timers, key=lambda t: (t.at, t.label)):
        ops += timer.ops
    for op in [*ops, *plan.epilogue]:
        executor.inline(op)
    run_checkers(plan.checkers, history.ops)
    return len(history.ops)


def throughput(url: str, schedules: int) -> None:
    for workload in WORKLOADS:
        plans = [build_plan(workload, RandomDraw(random.Random(f"bench:{n}")), 3)
                 for n in range(schedules)]
        with explore_store(url) as (store, _):
            start = time.perf_counter()
            for n, plan in enumerate(plans):
                sequential(store, plan, f"seq{os.getpid()}.{time.time_ns()}.{n}")
            baseline = time.perf_counter() - start
            with Controller(store) as controller:
                start = time.perf_counter()
                found = search(controller, Settings(workload=workload, budget=schedules,
                                                    seed=1, clients=3))
                explored = time.perf_counter() - start
        steps = found.progress.steps
        print(f"  {workload:<13} {schedules / explored:7.0f} schedules/s {steps / explored:7.0f} "
              f"steps/s   sequential baseline {schedules / baseline:7.0f} schedules/s   "
              f"explore runs at {baseline / explored:4.2f}x its speed")


def first_violation(url: str, seeds: int) -> None:
    for mutant, workload in MUTANT_WORKLOADS.items():
        explore_s, counts, shrink_s, stress_s = [], [], [], []
        stress_missed = 0
        for seed in range(seeds):
            with explore_store(f"mutant:{mutant}@{url}") as (store, _), \
                    Controller(store) as controller:
                start = time.perf_counter()
                found = search(controller, Settings(workload=workload, budget=1000, seed=seed))
                explore_s.append(time.perf_counter() - start)
                assert found.outcome is not None, f"{mutant} not found with seed {seed}"
                counts.append(found.progress.schedules)
                start = time.perf_counter()
                shrink(controller, found.outcome)
                shrink_s.append(time.perf_counter() - start)
            target = open_target(f"mutant:{mutant}@{url}")
            try:
                start = time.perf_counter()
                free = stress(target, Settings(workload=workload, budget=STRESS_CAP, seed=seed))
                if free.outcome is None:
                    stress_missed += 1
                else:
                    stress_s.append(time.perf_counter() - start)
            finally:
                target.close()
        ms = statistics.median(explore_s) * 1000
        free_text = (f"{statistics.median(stress_s) * 1000:7.1f} ms" if stress_s else "   never")
        missed = (f" (missed {stress_missed}/{seeds} in {STRESS_CAP} rounds)"
                  if stress_missed else "")
        ratio = (f"   stress/explore {statistics.median(stress_s) * 1000 / ms:5.2f}x"
                 if stress_s else "")
        print(f"  {mutant:<21} {ms:7.1f} ms, {statistics.median(counts):3.0f} schedules "
              f"(shrink {statistics.median(shrink_s) * 1000:6.0f} ms)   stress baseline "
              f"{free_text}{missed}{ratio}")


@contextmanager
def scratch_pg(dsn: str) -> Iterator[str]:
    import psycopg

    name = "harness_bench_explore"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--pg", default=os.environ.get("HARNESS_PG_DSN"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(f"SQLite: throughput on the reference store ({args.schedules} schedules each)")
        throughput(f"sqlite:///{folder}/throughput.db", args.schedules)
        print(f"SQLite: time to the first violation (median of {args.seeds} seeds)")
        first_violation(f"sqlite:///{folder}/mutants.db", args.seeds)
    if args.pg:
        with scratch_pg(args.pg) as url:
            print(f"PostgreSQL: throughput on the reference store ({args.schedules} schedules "
                  "each)")
            throughput(url, args.schedules)
            print(f"PostgreSQL: time to the first violation (median of {args.seeds} seeds)")
            first_violation(url, args.seeds)


if __name__ == "__main__":
    main()
