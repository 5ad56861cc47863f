"""Drill benchmark: one drill suite on a real service, tagged intents concurrently and one by one,
in the same run; and what the recording fakes add per provider call.

    python -m bench.drill [--trials 20] [--concurrency 36] [--timeout 0.3] [--drills all]
                          [--calls 300] [--smoke]

1. The correct example service (``examples/drill/correct_service.py``, the official ``openai``
   and ``anthropic`` SDKs as clients of the fakes) on loopback; every drill × ``--trials``
   intents, first ``--concurrency`` at a time (tagged intents of every drill mixed), then one
   at a time. Goals: the concurrent run ≥ 8x faster than the sequential one at 20 trials, and
   its wall time ≤ 1.5x the longest scripted wait per round of trials (a round:
   ``--concurrency`` intents at once; the longest wait: the slowest intent of the sequential
   run, the service's own timeout, hedge and abandonment included). The example keeps its jobs
   in SQLite: far past ~40 intents at once its inserts meet "database is locked".
2. The fakes' cost: ``--calls`` sequential calls to a recording fake (signed, tagged, one
   persistent connection) beside the same calls to a bare ASGI app answering the same bytes on
   the same server stack. Goal: ≤ 1 ms added per provider call (median).

``--smoke``: tiny sizes, every part runs, no goal judged (CI keeps the script from rotting).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from harness.drill.drills import NAMES, parse_names
from harness.drill.engine import drilling
from harness.providers.fake_server import FakeServer, bind_socket, uvicorn_server
from harness.providers.recording import RecordingFake
from harness.target.drill_profile import DrillProfile
from harness.target.drill_section import DrillSection

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "examples" / "drill" / "correct_service.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _section(timeout: float) -> DrillSection:
    return DrillSection.model_validate({
        "submit": {"path": "/jobs", "headers": {"Idempotency-Key": "{key}", "X-Owner": "bench"},
                   "body": {"text": "Summarise ticket {tag} in one line."}},
        "observe": {"path": "/jobs/{job_id}", "headers": {"X-Owner": "bench"},
                    "result_field": "result.text",
                    "statuses": {"succeeded": ["succeeded"], "failed": ["failed"],
                                 "running": ["queued", "running"]},
                    "races": {"path": "/jobs/{job_id}/races"}},
        "providers": [{"name": "gpt", "wire": "openai", "role": "primary", "port": 1},
                      {"name": "claude", "wire": "anthropic", "role": "fallback", "port": 1}],
        "timeouts": {"provider_s": timeout, "job_s": 10},
        "policy": {"max_billed_calls": 2, "hedge": {"allowed": True, "after_s": timeout}},
    })


def _start_service(primary: int, fallback: int,
                   timeout: float) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{primary}/v1",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fallback}", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, str(SERVICE), "--port", "0", "--timeout",
                                str(timeout)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=env)  # its tracebacks: failed calls, expected
    assert process.stdout is not None
    for line in process.stdout:  # blocks until the service says where it listens (or exits)
        if line.startswith("listening on "):
            return process, line.split()[-1]
    raise SystemExit(f"{SERVICE.name} exited with {process.wait()}")


def suite(trials: int, timeout: float, drills: list[str], concurrency: int) -> dict[str, Any]:
    primary, fallback = free_port(), free_port()
    profile = DrillProfile("bench", _section(timeout))
    ports = {"gpt": primary, "claude": fallback}
    process, url = _start_service(primary, fallback, timeout)
    out: dict[str, Any] = {"trials": trials, "drills": len(drills), "timeout_s": timeout}
    try:
        for mode, at_once in (("concurrent", concurrency), ("sequential", 1)):
            with drilling(profile, target=url, env={}, ports=ports,
                          concurrency=at_once) as engine:
                run = engine.run(drills, trials)
            verdicts = [v for vs in run.verdicts.values() for v in vs]
            longest = max(v.evidence.ended_at - v.evidence.started_at for v in verdicts)
            broken: dict[str, int] = {}
            for v in verdicts:
                for f in v.findings:
                    if f.verdict in ("broken", "unknown"):
                        what = f"{v.evidence.drill}: {f.promise} {f.verdict}"
                        broken[what] = broken.get(what, 0) + 1
            out[mode] = {"wall_s": round(run.wall_s, 3), "calls": run.calls,
                         "longest_intent_s": round(longest, 3),
                         "passed": sum(v.verdict == "passed" for v in verdicts),
                         "intents": len(verdicts), "not_passed": broken}
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    seq, con = out["sequential"], out["concurrent"]
    out["speedup"] = round(seq["wall_s"] / con["wall_s"], 1)
    rounds = -(-trials * len(drills) // concurrency)
    out["rounds"] = rounds
    out["round_ratio"] = round(con["wall_s"] / rounds / seq["longest_intent_s"], 2)
    return out


async def _bare(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The same bytes a recording fake answers, with nothing recorded or parsed."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(_BARE)).encode())]})
    await send({"type": "http.response.body", "body": _BARE})


_BARE = b""


def fake_cost(calls: int) -> dict[str, Any]:
    global _BARE
    body = {"model": "gpt", "messages": [{"role": "user", "content": "t drill-0123456789ab"}]}
    fake = RecordingFake("openai-chat", name="gpt", signed=True)
    times: dict[str, list[float]] = {"fake": [], "bare": []}
    with FakeServer(fake) as server, httpx.Client(base_url=server.url) as client:
        _BARE = client.post("/v1/chat/completions", json=body).content
        for _ in range(20):  # warm up
            client.post("/v1/chat/completions", json=body)
        for _ in range(calls):
            t = time.perf_counter()
            client.post("/v1/chat/completions", json=body)
            times["fake"].append(time.perf_counter() - t)
    sock = bind_socket("127.0.0.1", 0)  # the fakes' own socket options (TCP_NODELAY)
    bare = uvicorn_server(_bare)  # type: ignore[arg-type]
    thread = threading.Thread(target=bare.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with httpx.Client(base_url=url) as client:
        for _ in range(200):  # until it answers (the thread is starting)
            try:
                client.post("/v1/chat/completions", json=body)
                break
            except httpx.TransportError:
                time.sleep(0.01)  # polling for the server to come up, not synchronisation
        for _ in range(20):  # warm up
            client.post("/v1/chat/completions", json=body)
        for _ in range(calls):
            t = time.perf_counter()
            client.post("/v1/chat/completions", json=body)
            times["bare"].append(time.perf_counter() - t)
    bare.should_exit = True
    thread.join(timeout=10)
    sock.close()
    fake_ms = statistics.median(times["fake"]) * 1000
    bare_ms = statistics.median(times["bare"]) * 1000
    return {"calls": calls, "fake_median_ms": round(fake_ms, 3),
            "bare_median_ms": round(bare_ms, 3), "added_ms": round(fake_ms - bare_ms, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=36, help="intents at once")
    parser.add_argument("--timeout", type=float, default=0.3, help="the service's timeout, s")
    parser.add_argument("--drills", default="all")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    trials, calls = (2, 20) if args.smoke else (args.trials, args.calls)
    drills = ["control", "hang", "late"] if args.smoke else parse_names(args.drills)
    concurrency = 6 if args.smoke else args.concurrency
    result = {"suite": suite(trials, args.timeout, drills, concurrency),
              "fakes": fake_cost(calls)}
    print(json.dumps(result, indent=2))
    if args.smoke:
        return
    s, f = result["suite"], result["fakes"]
    print(f"concurrent {s['concurrent']['wall_s']} s vs sequential {s['sequential']['wall_s']} s "
          f"for {s['drills']} drills x {trials} trials: {s['speedup']}x (goal >= 8x)")
    print(f"concurrent wall per round ({s['rounds']} rounds of {args.concurrency}) / longest "
          f"intent: {s['round_ratio']} (goal <= 1.5)")
    print(f"fake: {f['added_ms']} ms added per call, median (goal <= 1 ms)")
    print(f"drills: {', '.join(drills)} (of {', '.join(NAMES)})")


if __name__ == "__main__":
    main()
