"""Explore benchmark: your service through its storage (the three examples), and the store.

    python -m bench.explore [--smoke] [--schedules 300] [--seeds 5] [--trials 20]
                            [--pg postgresql://…] [--only through|store]
                            (PostgreSQL also from HARNESS_PG_DSN; a scratch database
                             harness_bench_explore is created and dropped; redis-server from
                             PATH is started on a free port)

Through the proxy, per example service (examples/), measured in the same run:
- free running: the rate at which ``scenarios run scenarios/detection/duplicate_arrivals.yaml
  --trials N`` (burst, staggered, straddle; 8 copies) catches the race, the service talking to
  its storage directly;
- explore --through: the schedules and wall time to the first violation (median of ``--seeds``
  seeds; PCT depth 2, and seeded swarm choices), and schedules/s on the correct twin;
- the proxy's overhead per command against a direct connection (Redis GET, PostgreSQL
  SELECT 1; the gate open).
Goal (issue 14): each race in ≤ 100 schedules (median) where free running finds it in ≤ 5 % of
trials, and ≤ 0.2 ms per command. A miss is printed as MISSED with the figures. ``--smoke``:
tiny sizes, no goal judged.

On the store (SQLite and PostgreSQL):

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
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness.domain.clock import EPOCH, ManualClock
from harness.explore.controller import Controller
from harness.explore.ops import Executor
from harness.explore.plan import Plan, RandomDraw
from harness.explore.search import SearchSettings, search
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
from tests._servers import free_port

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


def backend_cpu(controller: Controller) -> dict[int, float] | None:
    """PostgreSQL: CPU seconds used so far by each backend serving this database (the workers',
    the pool's, the lock-wait probe's), from /proc; None on SQLite or a server elsewhere."""
    if controller.sessions.kind != "postgres":
        return None
    rows = controller.sessions.control.execute(  # type: ignore[attr-defined]
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()").fetchall()
    used: dict[int, float] = {}
    for (pid,) in rows:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        used[int(pid)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


def throughput(url: str, schedules: int) -> None:
    """Schedules/s against the sequential baseline, and the CPU each schedule costs: this
    process (the controller and its workers) and, on a local PostgreSQL, its backends. CPU is
    what a loaded machine cannot hide; wall time rises and falls with the load."""
    for workload in WORKLOADS:
        plans = [build_plan(workload, RandomDraw(random.Random(f"bench:{n}")), 3)
                 for n in range(schedules)]
        with explore_store(url) as (store, _):
            start = time.perf_counter()
            for n, plan in enumerate(plans):
                sequential(store, plan, f"seq{os.getpid()}.{time.time_ns()}.{n}")
            baseline = time.perf_counter() - start
            with Controller(store) as controller:
                before = backend_cpu(controller)
                start, cpu = time.perf_counter(), time.process_time()
                found = search(controller, SearchSettings(workload=workload, budget=schedules,
                                                    seed=1, clients=3))
                explored, cpu = time.perf_counter() - start, time.process_time() - cpu
                after = backend_cpu(controller)  # the workers' backends began after `before`
        steps = found.progress.steps
        server = ""
        if before is not None and after is not None:
            used = sum(t - before.get(pid, 0.0) for pid, t in after.items())
            server = f" + server {1000 * used / schedules:4.1f}"
        print(f"  {workload:<13} {schedules / explored:7.0f} schedules/s {steps / explored:7.0f} "
              f"steps/s   sequential baseline {schedules / baseline:7.0f} schedules/s   "
              f"explore runs at {baseline / explored:4.2f}x its speed   CPU per schedule: "
              f"explore {1000 * cpu / schedules:4.1f}{server} ms")


def first_violation(url: str, seeds: int) -> None:
    for mutant, workload in MUTANT_WORKLOADS.items():
        if seeds == 1 and mutant not in ("check-then-insert", "last-write-wins"):
            continue  # smoke: two mutants are enough to prove the script runs
        explore_s, counts, shrink_s, stress_s = [], [], [], []
        stress_missed = 0
        for seed in range(seeds):
            with explore_store(f"mutant:{mutant}@{url}") as (store, _), \
                    Controller(store) as controller:
                start = time.perf_counter()
                found = search(controller,
                               SearchSettings(workload=workload, budget=1000, seed=seed))
                explore_s.append(time.perf_counter() - start)
                assert found.outcome is not None, f"{mutant} not found with seed {seed}"
                counts.append(found.progress.schedules)
                start = time.perf_counter()
                shrink(controller, found.outcome)
                shrink_s.append(time.perf_counter() - start)
            target = open_target(f"mutant:{mutant}@{url}")
            try:
                start = time.perf_counter()
                free = stress(target, SearchSettings(workload=workload,
                                                     budget=STRESS_CAP if seeds > 1 else 5,
                                                     seed=seed))
                if free.outcome is None:
                    stress_missed += 1
                else:
                    stress_s.append(time.perf_counter() - start)
            finally:
                target.close()
        ms = statistics.median(explore_s) * 1000
        free_text = (f"{statistics.median(stress_s) * 1000:7.1f} ms" if stress_s else "   never")
        missed = (f" (missed {stress_missed}/{seeds} in {STRESS_CAP if seeds > 1 else 5} rounds)"
                  if stress_missed else "")
        ratio = (f"   stress/explore {statistics.median(stress_s) * 1000 / ms:5.2f}x"
                 if stress_s else "")
        print(f"  {mutant:<21} {ms:7.1f} ms, {statistics.median(counts):3.0f} schedules "
              f"(shrink {statistics.median(shrink_s) * 1000:6.0f} ms)   stress baseline "
              f"{free_text}{missed}{ratio}")


# -- your service, through its storage ---------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
THROUGH = [  # example, service script, storage, the race's checker
    ("redis-lock", "redis_lock_service.py", "redis"),
    ("redis-two-writes", "redis_two_writes_service.py", "redis"),
    ("pg-claim", "pg_claim_service.py", "postgresql"),
]
SCHEDULE_CAP = 500


@contextmanager
def redis_server() -> Iterator[str]:
    """A redis-server of this run on a free loopback port."""
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        if "Ready to accept connections" in line:
            break
    stdout = server.stdout
    threading.Thread(target=lambda: stdout.read(), daemon=True).start()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait()
        stdout.close()


def _command(script: str, flag: str, folder: str, port: int, correct: bool) -> str:
    return (f"{sys.executable} {EXAMPLES / script} --port {port} --db {folder}/{port}.db "
            f"--{flag} {{proxy}}{' --correct' if correct else ''}")


def free_running(example: str, script: str, flag: str, storage: str, folder: str,
                 trials: int) -> tuple[int, int]:
    """``scenarios run duplicate_arrivals --trials N`` against the service on its storage
    directly: (trials that caught the race, trials)."""
    from harness.explore.service import ServiceProcess, wait_healthy
    from harness.scenarios.loader import load_scenario
    from harness.scenarios.trials import run_trials

    port = free_port()
    service = ServiceProcess(_command(script, flag, folder, port, False), storage,
                             Path(folder) / f"{example}-free.log")
    target = open_target(f"http://127.0.0.1:{port}",
                         profile=EXAMPLES / f"{example}.profile.yaml")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", "/healthz", service)
        scenario = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                                 "detection" / "duplicate_arrivals.yaml")
        ts = run_trials(scenario, target, seed=1, trials=trials, patterns=None)
        caught = sum(ts.violated(p) for p in ts.patterns)
        print(f"  {example:<17} free running: " + ", ".join(
            f"{p} {ts.violated(p)}/{len(ts.runs.get(p, []))}" for p in ts.patterns), flush=True)
        return caught, len(ts.all_runs)
    finally:
        target.close()
        service.stop()


def through_runs(example: str, script: str, flag: str, storage: str, folder: str,
                 seeds: int, schedules: int) -> dict[str, object]:
    """Explore through the proxy: schedules and seconds to the first violation per seed (PCT
    and seeded swarm), then schedules/s on the correct twin."""
    from harness.explore.http_workloads import http_builder
    from harness.explore.serving import serving, warm_up

    figures: dict[str, object] = {}
    for correct in (False, True):
        port = free_port()
        with serving(target_text=f"http://127.0.0.1:{port}",
                     profile=str(EXAMPLES / f"{example}.profile.yaml"), tokens_file=None,
                     storage=storage, listen=None, health_path="/healthz", settle_ms=100.0,
                     service_cmd=_command(script, flag, folder, port, correct),
                     log=Path(folder) / f"{example}-{correct}.log") as (controller, proxy, _):
            build = http_builder(set(controller.target.capabilities) | {"in_flight"})
            warm_up(controller, proxy, build, "double-click")
            if correct:
                start, cpu = time.perf_counter(), _cpu_s()
                found = search(controller, SearchSettings(workload="all", budget=schedules,
                                                    seed=99, choices="pct"), build=build)
                done = found.progress.schedules
                figures["twin"] = (done / (time.perf_counter() - start), found.outcome is None,
                                   (_cpu_s() - cpu) * 1000 / max(done, 1))
                continue
            for choices in ("pct", "seeded"):
                counts, seconds = [], []
                for seed in range(seeds):
                    start = time.perf_counter()
                    found = search(controller, SearchSettings(
                        workload="double-click", budget=SCHEDULE_CAP, seed=seed,
                        choices=choices), build=build)
                    seconds.append(time.perf_counter() - start)
                    counts.append(found.progress.schedules if found.outcome is not None
                                  else None)
                figures[choices] = (counts, seconds)
    return figures


def _cpu_s() -> float:
    """This process's CPU seconds so far (user + system, every thread: the controller, its
    workers, the proxy's links) — the figure that holds on a loaded machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


_CLIENT = """
import statistics, sys, time
url, n = sys.argv[1], int(sys.argv[2])
if url.startswith("redis"):
    import redis
    client = redis.Redis.from_url(url)
    call = lambda: client.get("bench:overhead")
else:
    import psycopg
    client = psycopg.connect(url, autocommit=True)
    call = lambda: client.execute("SELECT 1").fetchone()
call()
start = time.perf_counter()
for _ in range(n):
    call()
print((time.perf_counter() - start) / n * 1e6)
"""


def overhead(storage: str, n: int, *, rounds: int) -> tuple[float, float, float]:
    """Microseconds per command from a client process of its own (as a service is), direct and
    through the proxy (gate open), the median of ``rounds`` paired rounds of ``n`` commands (a
    pair sees the same load); and the proxy's own CPU time per command (this process runs only
    the proxy meanwhile), which load does not inflate."""
    from harness.explore.proxy import Proxy, Upstream

    def timed(url: str) -> tuple[float, float]:
        cpu = time.process_time()
        out = subprocess.run([sys.executable, "-c", _CLIENT, url, str(n)], check=True,
                             capture_output=True, text=True).stdout
        return float(out.strip()), (time.process_time() - cpu) / n * 1e6

    with Proxy(Upstream.parse(storage)) as proxy:
        paired = [(timed(storage)[0], *timed(proxy.url)) for _ in range(rounds)]
    return (statistics.median(r[0] for r in paired), statistics.median(r[1] for r in paired),
            statistics.median(r[2] for r in paired))


def _median(values: list[int | None]) -> str:
    found = sorted(v for v in values if v is not None)
    missed = len(values) - len(found)
    if not found:
        return f"none in {SCHEDULE_CAP}"
    text = f"{statistics.median(found):g}"
    return text + (f" ({missed} missed in {SCHEDULE_CAP})" if missed else "")


def through_bench(*, smoke: bool, seeds: int, trials: int, schedules: int,
                  pg: str | None) -> None:
    print("Your service through its storage (examples/; goal: ≤ 100 schedules median where free "
          "running finds the race in ≤ 5 % of trials; ≤ 0.2 ms per command)")
    misses = []
    with tempfile.TemporaryDirectory() as folder, redis_server() as redis_url, \
            (scratch_pg(pg) if pg else nullcontext(None)) as pg_url:
        for example, script, flag in THROUGH:
            storage = redis_url if flag == "redis" else pg_url
            if storage is None:
                print(f"  {example:<17} skipped: no PostgreSQL (--pg or HARNESS_PG_DSN)")
                continue
            caught, runs = free_running(example, script, flag, storage, folder, trials)
            figures = through_runs(example, script, flag, storage, folder, seeds, schedules)
            pct_counts, pct_s = figures["pct"]  # type: ignore[misc]
            swarm_counts, _ = figures["seeded"]  # type: ignore[misc]
            rate, twin_clean, twin_cpu = figures["twin"]  # type: ignore[misc]
            print(f"  {example:<17} free running {caught}/{runs} trials ({caught / runs:.1%}); "
                  f"through the proxy: PCT {_median(pct_counts)} schedules, "
                  f"{statistics.median(pct_s) * 1000:.0f} ms (seeded: "
                  f"{_median(swarm_counts)}); twin {rate:.0f} schedules/s, "
                  f"{'clean' if twin_clean else 'VIOLATED'} in {schedules}, explore's process "
                  f"{twin_cpu:.1f} ms CPU per schedule")
            found = [c for c in pct_counts if c is not None]
            if not smoke and (len(found) < len(pct_counts) or statistics.median(found) > 100):
                misses.append(f"{example}: PCT median {_median(pct_counts)} schedules > 100")
            if not smoke and caught / runs > 0.05:
                misses.append(f"{example}: free running caught it in {caught / runs:.1%} of "
                              "trials (> 5 %: the race is not rare there)")
        n = 100 if smoke else 1000
        for name, storage in (("Redis GET", redis_url), ("PostgreSQL SELECT 1", pg_url)):
            if storage is None:
                continue
            direct, proxied, cpu = overhead(storage, n, rounds=1 if smoke else 9)
            print(f"  proxy overhead, {name:<19} direct {direct:6.1f} µs, through the proxy "
                  f"{proxied:6.1f} µs: +{(proxied - direct) / 1000:.3f} ms per command (the "
                  f"proxy's CPU: {cpu:.0f} µs per command)")
            if not smoke and proxied - direct > 200:
                misses.append(f"proxy overhead for {name}: {(proxied - direct) / 1000:.3f} ms")
    for miss in misses:
        print(f"  MISSED  {miss}")


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
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, no goal judged (CI: proves the script runs)")
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=20,
                        help="free-running trials per arrival pattern (x3 patterns)")
    parser.add_argument("--pg", default=os.environ.get("HARNESS_PG_DSN"))
    parser.add_argument("--only", choices=("through", "store"), default=None)
    args = parser.parse_args()
    if args.smoke:
        args.schedules, args.seeds, args.trials = 4, 1, 1
    if args.only != "store":
        through_bench(smoke=args.smoke, seeds=args.seeds, trials=args.trials,
                      schedules=max(args.schedules, 10), pg=args.pg)
    if args.only == "through":
        return
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
