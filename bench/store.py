"""Store benchmark: the store layer against raw SQL running the same statements, same run.

    python -m bench.store [--n 2000] [--pg postgresql://…]   (PostgreSQL also from HARNESS_PG_DSN)
    python -m bench.store --smoke                             (tiny sizes: CI checks it runs)

Prints, per backend, creates/s, replays/s and claims/s through the store and through bare
driver calls of the same statements (no validation, no entities), their ratio (goal >= 0.8),
and p50/p99 latency of a 32-thread double-click storm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.domain import Intent, payload_digest
from harness.store import SqlStore, open_store

INTENT = Intent(contract="bench", input={"ticket": "printer on fire", "priority": 2})


def rate(n: int, fn: Callable[[int], Any]) -> float:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - start)


def raw_ops(store: SqlStore, tag: str) -> dict[str, Callable[[int], Any]]:
    """The store's own statements, executed bare inside the same kind of transaction."""
    def params() -> dict[str, Any]:
        # A caller must serialise the request's JSON on every call; so does the baseline.
        return {
            "owner_id": "raw",
            "fingerprint": INTENT.fingerprint,
            "contract": INTENT.contract,
            "input": store._json_in(INTENT.input),
            "params": store._json_in(INTENT.params),
            "policy": store._json_in(INTENT.policy.to_json()),
            "max_open_attempts": 1,
        }

    def create(i: int) -> None:
        with store.statements() as tx:
            tx.execute(
                "insert_job",
                {**params(), "id": f"job_{tag}{i}", "idempotency_key": f"{tag}-{i}",
                 "now": store._now()},
            )

    def replay(i: int) -> None:
        with store.statements() as tx:
            tx.execute(
                "insert_job",
                {**params(), "id": f"job_x{tag}{i}", "idempotency_key": f"{tag}-{i}",
                 "now": store._now()},
            )
            tx.execute("job_by_key", {"owner_id": "raw", "idempotency_key": f"{tag}-{i}"})

    attempts: list[dict[str, Any]] = []

    def claim(i: int) -> None:
        a = attempts[i]
        result = {"ok": i}
        digest = payload_digest(result)  # the data model needs it: races and repeats keep it
        if "claim" in store.queries:  # PostgreSQL: the claim is one statement
            with store.statements() as tx:
                tx.one("claim", attempt_id=a["id"], owner_id="raw",
                       result=store._json_in(result), result_sha256=digest,
                       race_id=f"race_{tag}{i}", now=store._now())
            return
        with store.transaction() as tx:
            row = tx.one("attempt_by_id", attempt_id=a["id"], owner_id="raw")
            assert row is not None
            tx.execute(
                "claim_result",
                {"job_id": row["job_id"], "attempt_id": row["id"], "read_version": 1,
                 "result": store._json_in(result), "now": store._now()},
            )
            tx.execute(
                "move_attempt",
                {"attempt_id": row["id"], "from_state": "starting", "to_state": "succeeded",
                 "open_slot": None, "outcome": "won", "error": None, "result_sha256": digest,
                 "cancel_reason": None, "now": store._now()},
            )

    def prepare_claims(n: int) -> None:
        for i in range(n):
            job_id = f"job_{tag}{i}"
            with store.transaction() as tx:
                rows, _ = tx.execute(
                    "insert_attempt",
                    {"id": f"att_{tag}{i}", "job_id": job_id, "owner_id": "raw", "provider": "p",
                     "slot": 1, "now": store._now()},
                )
            attempts.append(dict(rows[0]))

    return {"create": create, "replay": replay, "claim": claim, "prepare_claims": prepare_claims}


def layer_ops(store: SqlStore, tag: str) -> dict[str, Callable[[int], Any]]:
    attempt_ids: list[str] = []
    owner = "layer"

    def prepare_claims(n: int) -> None:
        for i in range(n):
            job = store.get_job(owner, ids[i])
            attempt_ids.append(store.start_attempt(owner, job.id, "p").id)

    ids: list[str] = []

    def create(i: int) -> None:
        ids.append(store.create_job(owner, f"{tag}-{i}", INTENT).job.id)

    return {
        "create": create,
        "replay": lambda i: store.create_job(owner, f"{tag}-{i}", INTENT),
        "claim": lambda i: store.succeed(owner, attempt_ids[i], {"ok": i}),
        "prepare_claims": prepare_claims,
    }


def storm(store: SqlStore, rounds: int = 20, n: int = 32) -> tuple[float, float]:
    """p50 / p99 latency (ms) of each request in rounds of ``n`` barrier-released clicks."""
    latencies: list[float] = []
    lock = threading.Lock()
    with ThreadPoolExecutor(n) as pool:
        for r in range(rounds):
            barrier = threading.Barrier(n)
            key = f"storm-{uuid.uuid4().hex}-{r}"

            def click(_: int, key: str = key, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                t = time.perf_counter()
                store.create_job("storm", key, INTENT)
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)

            list(pool.map(click, range(n)))
    q = statistics.quantiles(latencies, n=100)
    return q[49], q[98]


ROUNDS = 9


def bench_backend(name: str, url: str, n: int, storm_rounds: int = 20) -> None:
    store = open_store(url, pool_size=40) if url.startswith("postgres") else open_store(url)
    tag = uuid.uuid4().hex[:8]
    raw, layer = raw_ops(store, tag), layer_ops(store, tag)
    results = {}
    # Alternate baseline and layer in rounds; the ratio is the median of the paired per-round
    # ratios, so load from anything else on the machine falls on both sides of each pair alike.
    # Every round measures ``per`` operations: ``total`` jobs exist, not ``n`` (which need not be
    # a multiple of the rounds), and the claims are prepared for exactly those jobs.
    rounds, per = ROUNDS, max(1, n // ROUNDS)
    total = rounds * per
    for op in ("create", "replay", "claim"):
        if op == "claim":
            raw["prepare_claims"](total)
            layer["prepare_claims"](total)
        raw_rates, layer_rates = [], []
        for r in range(rounds):
            offset = r * per
            raw_rates.append(rate(per, lambda i, f=raw[op], o=offset: f(o + i)))
            layer_rates.append(rate(per, lambda i, f=layer[op], o=offset: f(o + i)))
        ratio = statistics.median(s / r for r, s in zip(raw_rates, layer_rates, strict=True))
        results[op] = (statistics.median(raw_rates), statistics.median(layer_rates), ratio)
    p50, p99 = storm(store, rounds=storm_rounds)
    store.close()
    print(f"\n{name}  (n={total} per operation, one thread)")
    print(f"  {'operation':<8} {'raw SQL/s':>10} {'store/s':>10} {'ratio':>6}")
    for op, (r, s, ratio) in results.items():
        print(f"  {op:<8} {r:>10.0f} {s:>10.0f} {ratio:>6.2f}")
    print(f"  32-thread double-click storm ({storm_rounds} rounds): p50 {p50:.1f} ms, "
          f"p99 {p99:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--pg", default=os.environ.get("HARNESS_PG_DSN"))
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, to check that the benchmark runs (figures meaningless)")
    args = parser.parse_args(argv)
    n, storm_rounds = (2 * ROUNDS + 1, 2) if args.smoke else (args.n, 20)
    with tempfile.TemporaryDirectory() as tmp:
        bench_backend("SQLite (WAL, file)", f"sqlite:///{tmp}/bench.db", n, storm_rounds)
    if args.pg:
        bench_backend("PostgreSQL", args.pg, n, storm_rounds)
    else:
        print("\nPostgreSQL: skipped (set HARNESS_PG_DSN or --pg)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
