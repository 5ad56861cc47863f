"""Provider layer benchmark: our client's overhead, and the fake provider server on loopback.

    python -m bench.providers [--n 3000] [--concurrency 16] [--rounds 5] [--procs 2]
    python -m bench.providers --smoke    (tiny sizes: CI checks that it runs; no ratio judged)

1. Client overhead, per wire format: requests/s through ``ProviderClient.complete`` (build the
   body, send, classify, parse the reply) beside plain ``httpx.AsyncClient.post(json=body)`` of
   the same body dict (built once) to the same in-process fake transport, followed by
   ``response.json()``; same run, rounds interleaved, the median of the per-round ratios.
   Goal: ratio >= 0.8. The same comparison against a canned ``httpx.MockTransport`` (no fake
   app) shows the overhead at its sharpest.
2. The fake provider server (``failover-harness fake-provider`` in a subprocess, uvicorn) on a
   loopback socket: requests/s through our async client (``--concurrency`` keep-alive
   requests), and from ``--procs`` processes of sequential stdlib keep-alive clients (closer to
   the server's own capacity: the load generator is lighter).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor

import httpx

from harness.providers import ProviderClient, ProviderConfig, ProviderRequest, client_for
from harness.providers.fake_server import wait_until_ready
from harness.providers.fake_transport import FAKE_BASE_URLS, fake_transport

KINDS = ("openai-chat", "anthropic-messages")
SCHEMA = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["billing", "bug", "other"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 4},
        "summary": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["category", "priority", "summary", "tags"],
    "additionalProperties": False,
}
REQUEST = ProviderRequest(
    system="You triage support tickets. Answer with one JSON object.",
    user="Subject: charged twice\n\nMy card was charged twice for the March invoice.",
    schema=SCHEMA, schema_name="ticket",
)


def config(kind: str, base_url: str) -> ProviderConfig:
    return ProviderConfig(id=f"bench-{kind}", kind=kind, base_url=base_url, model="bench",
                          api_key_env="BENCH_KEY", tokenizer="tiktoken:cl100k_base",
                          context_window=8192, timeout={"connect": 5, "read": 30})


async def rate(n: int, concurrency: int, call: Callable[[], Awaitable[object]]) -> float:
    """Requests per second for ``n`` calls with ``concurrency`` workers."""
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - start)


async def overhead(kind: str, transport: httpx.AsyncBaseTransport, n: int, concurrency: int,
                   rounds: int) -> tuple[float, float, float]:
    """Median requests/s of our client and of plain httpx on ``transport``, and the median of
    the per-round ratios (each round measures both back to back, in alternating order, so
    both sides of a ratio see the same background load)."""
    client: ProviderClient = client_for(config(kind, FAKE_BASE_URLS[kind]),
                                        transport=transport, env={"BENCH_KEY": "sk-bench-0000"})
    body = client.build_request_body(REQUEST)  # the same JSON body, built once
    headers = client._headers  # the very headers our client sends

    async with client, httpx.AsyncClient(transport=transport, timeout=client._timeout) as raw:

        async def ours() -> object:
            return await client.complete(REQUEST)

        async def plain() -> object:
            response = await raw.post(client.url, json=body, headers=headers)
            return response.json()

        await rate(min(200, n), concurrency, ours)  # warm up both paths
        await rate(min(200, n), concurrency, plain)
        a, b = [], []
        for i in range(rounds):
            if i % 2:
                b.append(await rate(n, concurrency, plain))
                a.append(await rate(n, concurrency, ours))
            else:
                a.append(await rate(n, concurrency, ours))
                b.append(await rate(n, concurrency, plain))
    ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
    return statistics.median(a), statistics.median(b), ratio


async def canned(kind: str) -> httpx.MockTransport:
    """A transport that returns one fixed, valid reply of ``kind`` (no fake app)."""
    fake = client_for(config(kind, "fake://conformant"), env={})
    reply = await fake.complete(REQUEST)
    payload = json.dumps(reply.raw).encode()
    header = "x-request-id" if kind == "openai-chat" else "request-id"
    return httpx.MockTransport(lambda request: httpx.Response(
        200, content=payload, headers={"content-type": "application/json", header: "req_1"}))


def _hammer(port: int, path: str, body: bytes, headers: dict[str, str], n: int
            ) -> tuple[float, float]:
    """One load process: ``n`` keep-alive POSTs with the stdlib client; its (start, end) time."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    start = time.time()
    for _ in range(n):
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
    end = time.time()
    conn.close()
    return start, end


async def loopback(kind: str, n: int, concurrency: int, procs: int) -> tuple[float, float, int]:
    """Requests/s against the fake-provider CLI server on loopback: through our async client,
    and from ``procs`` stdlib-client processes (the server's own capacity); its delivery count."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "fake-provider", "--kind", kind, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        match = re.search(r":(\d+) ", proc.stdout.readline())
        if not match:
            raise RuntimeError(f"the fake provider did not start: {proc.stderr.read()}")  # type: ignore[union-attr]
        port = int(match.group(1))
        wait_until_ready("127.0.0.1", port, alive=lambda: proc.poll() is None)
        base = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai-chat" else "")
        client = client_for(config(kind, base), env={"BENCH_KEY": "sk-bench-0000"})
        async with client:
            await rate(min(200, n), concurrency, lambda: client.complete(REQUEST))
            ours = await rate(n, concurrency, lambda: client.complete(REQUEST))
        body = json.dumps(client.build_request_body(REQUEST)).encode()
        path = client.url.removeprefix(f"http://127.0.0.1:{port}")
        per = n // procs

        def each(count: int) -> list[list[object]]:  # pool.map's argument columns
            return [[port] * procs, [path] * procs, [body] * procs,
                    [client._headers] * procs, [count] * procs]

        with ProcessPoolExecutor(procs) as pool:
            list(pool.map(_hammer, *each(min(50, per))))  # start the processes and connections
            spans = list(pool.map(_hammer, *each(per)))
        raw = per * procs / (max(e for _, e in spans) - min(s for s, _ in spans))
        with httpx.Client() as http_client:
            delivered = http_client.get(f"http://127.0.0.1:{port}/_fake/deliveries").json()
        return ours, raw, delivered["total"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="requests per measurement")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="concurrent requests (httpx keeps 20 connections alive)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--procs", type=int, default=2, help="load processes for the server")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, to check that the benchmark runs (figures meaningless)")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.concurrency, args.rounds, args.procs = 20, 4, 1, 1
    print(f"n={args.n} concurrency={args.concurrency} rounds={args.rounds} "
          f"python={sys.version.split()[0]} httpx={httpx.__version__}\n")
    print("1. client overhead (requests/s: median of rounds; ratio: median of per-round ratios)")
    print(f"   {'wire format':<20} {'transport':<22} {'our client':>11} {'plain httpx':>12} "
          f"{'ratio':>6}")
    for kind in KINDS:
        for label, transport in (("in-process fake", fake_transport(kind)),
                                 ("canned MockTransport", await canned(kind))):
            ours, plain, ratio = await overhead(kind, transport, args.n, args.concurrency,
                                                args.rounds)
            verdict = "ok" if ratio >= 0.8 else "BELOW GOAL"
            print(f"   {kind:<20} {label:<22} {ours:>11.0f} {plain:>12.0f} "
                  f"{ratio:>6.2f}  {verdict if label == 'in-process fake' else ''}")
    print(f"\n2. fake provider server on loopback (uvicorn subprocess, keep-alive): requests/s "
          f"through our async client ({args.concurrency} concurrent) and from {args.procs} "
          "stdlib-client processes")
    for kind in KINDS:
        ours, raw, delivered = await loopback(kind, args.n, args.concurrency, args.procs)
        print(f"   {kind:<20} our client {ours:>6.0f}   stdlib clients {raw:>6.0f}   "
              f"({delivered} deliveries counted)")


if __name__ == "__main__":
    asyncio.run(main())
