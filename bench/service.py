"""Service benchmark: API v1 routes on loopback against a bare FastAPI route, in the same run.

    python -m bench.service [--requests 1000] [--rounds 5] [--clients 16 64] [--pg …]
                            (PostgreSQL also from HARNESS_PG_DSN; skipped without one)
    python -m bench.service --smoke      (tiny sizes: CI checks that it runs; no ratio judged)

Starts real processes on 127.0.0.1 — ``failover-harness serve`` over SQLite and over PostgreSQL,
and a bare uvicorn + FastAPI app whose route returns 201 and does nothing — all single-worker,
no access log, the same uvicorn defaults. A closed-loop load generator (asyncio, keep-alive
HTTP/1.1, one connection per client) then measures requests/s and p50/p99 latency for:

    create   POST /v1/jobs with a new Idempotency-Key each time            → 201
    replay   POST /v1/jobs with a key and body already used                 → 200 (replayed)
    claim    POST /v1/attempts/{id}/events {"type": "succeeded", …}         → 200, outcome won
    bare     POST /bare on the bare app                                     → 201

with 16 and 64 concurrent clients, and prints each route's throughput as a ratio of the bare
route's at the same concurrency: rounds alternate bare and ours, and the medians are compared.
Beside each figure, the server process's CPU time per request (from /proc): on a shared machine
the most stable measure of what a request costs. The load generator shares the machine's cores
with the server: the absolute figures are lower bounds, the ratios are what to compare.
Goal: >= 0.5 on PostgreSQL for create with 64 clients, and no row below 0.35.

Then the parts of a create, measured in-process (median µs per call), so the next step is
visible: parsing and validating the body, the fingerprint (RFC 8785 + SHA-256), the hop to a
store thread and back, the store's insert (CPU and wall), and serialising the reply.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from tests._servers import free_port

TOKEN = "bench-token-4f9c2a7e1b"
BODY = {"contract": "ticket_triage", "input": {"ticket": "printer on fire", "priority": 2}}
WARMUP = 200

BARE_APP = textwrap.dedent(
    """
    import sys
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()

    @app.post("/bare", status_code=201)
    async def bare() -> JSONResponse:
        return JSONResponse({}, status_code=201)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=False,
                log_level="warning")
    """
)


# -- processes ---------------------------------------------------------------------------------
@contextmanager
def serving(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run a server process until the block ends; yield its base URL once /healthz answers."""
    proc = subprocess.Popen(
        args, env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            with suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    SERVER_PIDS[url] = proc.pid
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"{args} did not become ready")
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        SERVER_PIDS.pop(url, None)


def serve_ours(db: str, port: int) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "serve", "--db", db, "--port", str(port),
            "--no-access-log", "--log-level", "warning"]


# -- the load generator --------------------------------------------------------------------------
def request_bytes(method: str, path: str, body: object, headers: dict[str, str]) -> bytes:
    payload = json.dumps(body, separators=(",", ":")).encode()
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {TOKEN}",
            "Content-Type: application/json", f"Content-Length: {len(payload)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return status, body


@dataclass
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us: float = float("nan")  # the server process's CPU time per request


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SERVER_PIDS: dict[str, int] = {}  # base URL → server process id (for its CPU time)


async def load(
    url: str, requests: list[bytes], clients: int, expect: int,
    check: Callable[[bytes], bool] | None = None,
) -> Result:
    """Send ``requests`` over ``clients`` keep-alive connections, each closed-loop."""
    port = int(url.rsplit(":", 1)[1])
    pid = SERVER_PIDS.get(url)
    cpu_before = process_cpu_s(pid) if pid else float("nan")
    queue = iter(requests)
    latencies: list[float] = []
    errors = 0

    async def client() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for request in queue:  # a shared iterator: each request is sent exactly once
                start = time.perf_counter()
                status, body = await _exchange(reader, writer, request)
                latencies.append(time.perf_counter() - start)
                if status != expect or (check is not None and not check(body)):
                    errors += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    cpu = (process_cpu_s(pid) - cpu_before) if pid else float("nan")
    ordered = sorted(latencies)
    return Result(
        rps=len(latencies) / elapsed,
        p50_ms=statistics.median(ordered) * 1000,
        p99_ms=ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        errors=errors,
        cpu_us=cpu / len(latencies) * 1e6,
    )


# -- the workloads -------------------------------------------------------------------------------
def create_requests(n: int, tag: str) -> list[bytes]:
    return [request_bytes("POST", "/v1/jobs", BODY, {"Idempotency-Key": f"{tag}-{i}"})
            for i in range(n)]


def fresh_attempts(url: str, n: int, tag: str) -> list[str]:
    """``n`` jobs with one ``starting`` attempt each, made through the API before timing."""
    from harness.service.client import AsyncHarnessClient

    async def make() -> list[str]:
        async with AsyncHarnessClient(url, TOKEN) as api:
            sem = asyncio.Semaphore(32)

            async def one(i: int) -> str:
                async with sem:
                    job = await api.create_job(f"{tag}-claim-{i}", BODY)
                    attempt = await api.start_attempt(job.body["id"], "openai")
                    return str(attempt.body["id"])

            return list(await asyncio.gather(*(one(i) for i in range(n))))

    return asyncio.run(make())


def claim_requests(attempt_ids: list[str]) -> list[bytes]:
    event = {"type": "succeeded", "result": {"label": "bug", "confidence": 0.9}}
    return [request_bytes("POST", f"/v1/attempts/{a}/events", event, {}) for a in attempt_ids]


def won(body: bytes) -> bool:
    return b'"outcome":"won"' in body


Workload = Callable[[int], Result]  # round number → a measurement of ``n`` requests


def workloads(url: str, n: int, clients: int, rounds: int, tag: str) -> list[tuple[str, Workload]]:
    """create, replay and claim; every round sends ``n`` requests it has not sent before
    (replay: ``n`` keys created beforehand, each round repeats them all)."""
    run = asyncio.run
    run(load(url, create_requests(WARMUP, f"{tag}-warm"), clients, 201))
    run(load(url, create_requests(n, f"{tag}-old"), clients, 201))
    attempts = fresh_attempts(url, n * rounds, tag)
    return [
        ("create", lambda r: run(load(url, create_requests(n, f"{tag}-new{r}"), clients, 201))),
        ("replay", lambda r: run(load(url, create_requests(n, f"{tag}-old"), clients, 200))),
        ("claim", lambda r: run(load(url, claim_requests(attempts[r * n:(r + 1) * n]), clients,
                                     200, won))),
    ]


def median_of(results: list[Result]) -> Result:
    return Result(
        rps=statistics.median(r.rps for r in results),
        p50_ms=statistics.median(r.p50_ms for r in results),
        p99_ms=statistics.median(r.p99_ms for r in results),
        errors=sum(r.errors for r in results),
        cpu_us=statistics.median(r.cpu_us for r in results),
    )


# -- the parts of a create, in-process ------------------------------------------------------------
def _median_us(fn: Callable[[], object], n: int) -> float:
    fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def parts(db: str, n: int) -> list[tuple[str, float]]:
    """Median µs of each part of a create on the store at ``db``, as the service does them."""
    from harness.domain import Intent, Policy
    from harness.domain.fingerprint import canonical_json
    from harness.service import schemas
    from harness.service.hop import StoreThreads
    from harness.service.payload import parse_json
    from harness.store import open_store

    raw = json.dumps(BODY).encode()
    body = parse_json(raw)
    model = schemas.validate(schemas.JobRequest, body, "job")

    def build() -> Intent:
        return Intent(contract=model.contract, input=model.input,
                      params={} if model.params is None else model.params,
                      policy=Policy(model.policy.max_open_attempts) if model.policy else Policy())

    intent = build()
    whole = {**intent.to_json()}
    fingerprint = _median_us(lambda: hashlib.sha256(canonical_json(whole)).hexdigest(), n)
    out = [("parse the body (strict JSON, storable)", _median_us(lambda: parse_json(raw), n)),
           ("validate it (the pydantic model)", _median_us(
               lambda: schemas.validate(schemas.JobRequest, body, "job"), n)),
           ("build the intent (excl. fingerprint)", max(0.0, _median_us(build, n) - fingerprint)),
           ("fingerprint (RFC 8785 + SHA-256)", fingerprint)]
    threads = StoreThreads(1)

    async def hops() -> float:
        await threads.call(int)
        start = time.perf_counter()
        for _ in range(n):
            await threads.call(int)
        return (time.perf_counter() - start) / n * 1e6

    out.append(("hop to a store thread and back (one at a time)", asyncio.run(hops())))
    threads.shutdown()
    store = open_store(db)
    counter = iter(range(10**9))
    tag = uuid.uuid4().hex[:8]
    cpu_start, wall = time.process_time(), _median_us(
        lambda: store.create_job("parts", f"{tag}-{next(counter)}", intent), n)
    cpu = (time.process_time() - cpu_start) / (n + 1) * 1e6
    out.append((f"store insert ({store.backend}): wall", wall))
    out.append((f"store insert ({store.backend}): client CPU", cpu))
    job = store.create_job("parts", f"{tag}-reply", intent).job
    out.append(("serialise the reply (to_json + dumps)", _median_us(
        lambda: json.dumps(job.to_json(), ensure_ascii=False, separators=(",", ":")).encode(),
        n)))
    store.close()
    return out


def measure_bare(url: str, n: int, clients: int) -> Result:
    bare = [request_bytes("POST", "/bare", BODY, {}) for _ in range(n)]
    asyncio.run(load(url, bare[:WARMUP], clients, 201))
    return asyncio.run(load(url, bare, clients, 201))


@contextmanager
def pg_database(dsn: str) -> Iterator[str]:
    """A throwaway database on the server at ``dsn`` (or ``dsn`` itself if we may not create)."""
    import psycopg

    name = f"harness_bench_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
    except psycopg.Error:
        yield dsn
        return
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per row")
    parser.add_argument("--clients", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--pg", default=os.environ.get("HARNESS_PG_DSN"))
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, to check that the benchmark runs (figures meaningless)")
    args = parser.parse_args(argv)
    if args.smoke:
        global WARMUP
        args.requests, args.rounds, args.clients, WARMUP = 40, 1, [4], 10
    with suppress(ImportError):
        import uvloop

        uvloop.install()

    env = {"HARNESS_TOKENS": f"{TOKEN}=bench"}
    workdir = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    (workdir / "bare_app.py").write_text(BARE_APP, encoding="utf-8")
    backends = [("sqlite", f"sqlite:///{workdir / 'bench.db'}")]
    if args.pg:
        backends.append(("postgres", args.pg))
    else:
        print("PostgreSQL skipped: set HARNESS_PG_DSN or pass --pg", file=sys.stderr)

    # Rounds alternate the bare route and ours at the same concurrency, seconds apart, and the
    # medians are compared: other load on a shared machine drifts over minutes.
    rows: list[tuple[str, int, Result, Result]] = []
    bare_port = free_port()
    with serving([sys.executable, str(workdir / "bare_app.py"), str(bare_port)], bare_port) as b:
        for backend, db in backends:
            ctx = pg_database(db) if backend == "postgres" else nullcontext(db)
            with ctx as url_db:
                port = free_port()
                with serving(serve_ours(url_db, port), port, env) as url:
                    for clients in args.clients:
                        tag = f"{backend}-{clients}-{uuid.uuid4().hex[:8]}"
                        for name, workload in workloads(url, args.requests, clients,
                                                        args.rounds, tag):
                            bare, ours = [], []
                            for r in range(args.rounds):
                                bare.append(measure_bare(b, args.requests, clients))
                                ours.append(workload(r))
                            rows.append((f"{backend} {name}", clients, median_of(ours),
                                         median_of(bare)))

    print(f"\n{args.requests} requests per round, median of {args.rounds} alternating rounds; "
          f"loopback, single-worker uvicorn, {os.cpu_count()} CPUs shared with the load "
          "generator (and PostgreSQL)")
    print(f"{'route':<18}{'clients':>8}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'CPU µs':>8}"
          f"{'bare req/s':>12}{'bare CPU µs':>12}{'ratio':>7}")
    for name, clients, ours_r, bare_r in rows:
        errors = f"  ({ours_r.errors} unexpected replies)" if ours_r.errors else ""
        print(f"{name:<18}{clients:>8}{ours_r.rps:>9.0f}{ours_r.p50_ms:>8.2f}"
              f"{ours_r.p99_ms:>8.2f}{ours_r.cpu_us:>8.0f}{bare_r.rps:>12.0f}"
              f"{bare_r.cpu_us:>12.0f}{ours_r.rps / bare_r.rps:>7.2f}{errors}")
    print("\nthe parts of a create, in-process (median µs per call)")
    for backend, db in backends:
        ctx = pg_database(db) if backend == "postgres" else nullcontext(db)
        with ctx as url_db:
            for label, us in parts(url_db, 50 if args.smoke else 2000):
                print(f"  {label:<48}{us:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
