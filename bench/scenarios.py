"""Scenario-engine benchmark: virtual time against real time, engine overhead, the matrix.

    python -m bench.scenarios [--runs 30] [--pg postgresql://…]   (PostgreSQL also from
                                                                   HARNESS_PG_DSN)
    python -m bench.scenarios --smoke    (tiny sizes: CI checks that it runs; no goal judged)

Prints, measured in the same run:
- out_of_order_completion on SQLite (virtual mode): median wall time
  against its 35 s of virtual time (goal: under 50 ms, i.e. >= 700x faster than real time),
  and against a baseline of the same eleven store calls made directly on the same kind of
  database (the engine's overhead: scheduler, threads, history, checkers);
- the whole detection matrix (every scenario × the reference and each mutant) on SQLite, and
  on PostgreSQL when a DSN is given: wall time and scenarios/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness.domain import Intent, Policy
from harness.domain.clock import EPOCH, ManualClock
from harness.scenarios import detection_matrix, load_scenario, open_target, run_scenario
from harness.scenarios.loader import scenario_files
from harness.store import SqlStore, open_store

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


def direct_calls(store: SqlStore, clock: ManualClock, n: int) -> None:
    """out_of_order_completion's eleven store calls, made directly (no engine)."""
    intent = Intent(contract="ticket_triage", input={"ticket": "printer on fire"},
                    policy=Policy(max_open_attempts=2))
    job = store.create_job("alice", f"ooo-{n}", intent).job
    a = store.start_attempt("alice", job.id, "primary")
    store.dispatch("alice", a.id)
    clock.advance(5)
    b = store.start_attempt("alice", job.id, "fallback")
    store.dispatch("alice", b.id)
    store.succeed("alice", b.id, {"from": "fallback"})
    store.get_job("alice", job.id)
    store.succeed("alice", a.id, {"from": "primary"})
    store.get_job("alice", job.id)
    store.list_attempts("alice", job.id)
    store.list_races("alice", job.id)


def median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--pg", default=os.environ.get("HARNESS_PG_DSN"))
    parser.add_argument("--smoke", action="store_true",
                        help="few runs, to check that the benchmark runs (figures meaningless)")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2

    scenario = load_scenario(SCENARIOS / "out_of_order_completion.yaml")
    target = open_target("sqlite")
    run_scenario(scenario, target)  # warm up: imports, the temporary database, caches
    engine = median_ms(lambda: run_scenario(scenario, target), args.runs)
    target.close()
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock(EPOCH)
        store = open_store(f"sqlite:///{folder}/direct.db", clock=clock)
        counter = iter(range(10**9))
        direct_calls(store, clock, next(counter))
        direct = median_ms(lambda: direct_calls(store, clock, next(counter)), args.runs)
        store.close()
    virtual = scenario.duration
    print(f"out_of_order_completion, SQLite, virtual time ({args.runs} runs, median)")
    print(f"  engine run            {engine:8.1f} ms   for {virtual:g} s of virtual time: "
          f"{virtual * 1000 / engine:,.0f}x faster than real time "
          f"(goal: < 50 ms, >= 700x)")
    print(f"  direct store calls    {direct:8.1f} ms   (the same 11 calls, no engine)")
    print(f"  engine / direct       {engine / direct:8.2f}x")

    scenarios = [load_scenario(p) for p in scenario_files([SCENARIOS])]
    databases: list[tuple[str, str | None]] = [("SQLite (one temporary file per store)", None)]
    if args.pg:
        databases.append(("PostgreSQL (one shared database)", args.pg))
    for label, database in databases:
        matrix = detection_matrix(scenarios, database)
        runs = len(matrix.cells)
        print(f"detection matrix on {label}: {len(scenarios)} scenarios x "
              f"{len(matrix.stores)} stores = {runs} runs in {matrix.elapsed_s:.2f} s, "
              f"{runs / matrix.elapsed_s:.1f} scenarios/s; problems: "
              f"{matrix.problems() or 'none'}")


if __name__ == "__main__":
    main()
