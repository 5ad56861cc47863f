"""Drill benchmark: the wall of a full CLI drill against its slowest intent, and what the
recording fakes add per provider call and while they hold answers.

    python -m bench.drill [--trials 10] [--concurrency 36] [--settle 1.0] [--drills all]
                          [--calls 300] [--held 50] [--smoke]

(a) One round. The correct example service (``examples/drill/correct_service.py``, the
    official ``openai`` and ``anthropic`` SDKs as clients of the fakes, its profile
    ``examples/drill/correct.profile.yaml``; ``--settle`` sets ``timeouts.settle_s``) on
    loopback; ``failover-harness drill`` as a subprocess, every drill x ``--trials`` intents,
    ``--concurrency`` at work at once. Goal: the CLI's wall (process start to exit) / the
    slowest intent (its submit to its close, settle included) ≤ 1.5: the drills run in one
    round and settle concurrently, not drill after drill. Also shown without the process
    start and imports (results.json's started_at to finished_at). Every verdict is counted
    (the correct service: every intent passes). Trials the load left without evidence are
    drilled again after the round (docs/drill.md): then the slowest intent of each round
    (from ``drill.json``) is summed in its place, and the count is shown.
(c) The fakes' cost. ``--calls`` sequential calls to a recording fake (signed, tagged, one
    persistent connection) beside the same calls to a bare ASGI app answering the same bytes on
    the same server stack. Goal: ≤ 1 ms added per provider call (median). Then ``--held``
    calls whose answers the fake holds for 1 s: the drill process's CPU time over that second
    / 1 s. Goal: ≤ 0.05 (held answers wait on events, not in a loop).

``--smoke``: tiny sizes, every part runs, no goal judged (CI keeps the script from rotting).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from harness.drill.drills import NAMES, parse_names
from harness.providers.fake_server import FakeServer, bind_socket, uvicorn_server
from harness.providers.recording import RecordingFake
from tests._servers import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "examples" / "drill" / "correct_service.py"
PROFILE = ROOT / "examples" / "drill" / "correct.profile.yaml"


def _start_service(primary: int, fallback: int, timeout: float,
                   db: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{primary}/v1",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fallback}", "PYTHONUNBUFFERED": "1"}
    # its primary let go 5 s after the call, as in the tests: the late drill's held answer
    # then always reaches it, whatever the load
    process = subprocess.Popen([sys.executable, str(SERVICE), "--port", "0", "--timeout",
                                str(timeout), "--abandon-after", "5", "--db", str(db)],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:  # blocks until the service says where it listens (or exits)
        if line.startswith("listening on "):
            return process, line.split()[-1]
    raise SystemExit(f"{SERVICE.name} exited with {process.wait()}")


def one_round(trials: int, drills: list[str], concurrency: int, settle: float | None,
              work: Path) -> dict[str, Any]:
    """(a): the CLI's wall against the slowest intent."""
    data = yaml.safe_load(PROFILE.read_text(encoding="utf-8"))
    if settle is not None:
        data["drill"]["timeouts"]["settle_s"] = settle
    timeout = float(data["drill"]["timeouts"]["provider_s"])
    profile = work / "correct.profile.yaml"
    profile.write_text(yaml.safe_dump(data), encoding="utf-8")
    primary, fallback = free_port(), free_port()
    process, url = _start_service(primary, fallback, timeout, work / "jobs.db")
    report = work / "report"
    env = {**os.environ, "PRIMARY_PORT": str(primary), "FALLBACK_PORT": str(fallback),
           "PYTHONPATH": str(ROOT)}
    try:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "drill", "--target", url, "--target-profile",
             str(profile), "--drills", ",".join(drills), "--trials", str(trials),
             "--concurrency", str(concurrency), "--report-dir", str(report), "--quiet"],
            env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
        wall = time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    results = json.loads((report / "latest" / "results.json").read_text("utf-8"))
    events = [e for e in results["events"] if e["type"] == "drill_run"]
    run_s = (datetime.fromisoformat(results["finished_at"].replace("Z", "+00:00"))
             - datetime.fromisoformat(results["started_at"].replace("Z", "+00:00"))
             ).total_seconds()
    # each round's slowest intent, from drill.json: the round, then the fresh intents of the
    # trials the load left without evidence (docs/drill.md): the wall is their sum at best
    drilled = json.loads((report / "latest" / "drill.json").read_text("utf-8"))["drills"]
    rounds = _rounds([[*(a["wall_s"] for a in i.get("drilled_again", [])), i["wall_s"]]
                      for intents in drilled.values() for i in intents])
    slowest = rounds[0] if rounds else max(e["wall_s"] for e in events)
    chain = sum(rounds) or slowest
    not_passed = {e["drill"]: {p["promise"]: p["broken"] + p["unknown"] for p in e["promises"]
                               if p["broken"] + p["unknown"]}
                  for e in events if e["verdict"] != "passed"}
    return {"intents": sum(e["trials"] for e in events), "drills": len(events),
            "concurrency": concurrency, "settle_s": settle, "exit": done.returncode,
            "cli_wall_s": round(wall, 2), "run_s": round(run_s, 2),
            "slowest_intent_s": round(slowest, 2), "rounds_s": [round(r, 2) for r in rounds],
            "drilled_again": sum(a["intents"] for e in events
                                 for a in e.get("drilled_again", [])),
            "ratio": round(wall / chain, 2), "run_ratio": round(run_s / chain, 2),
            "not_passed": not_passed}


def _rounds(attempts: list[list[float]]) -> list[float]:
    """The slowest intent of each round, from every trial's intents' walls (oldest first)."""
    return [max(walls[k] for walls in attempts if len(walls) > k)
            for k in range(max((len(w) for w in attempts), default=0))]


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
BODY = {"model": "gpt", "messages": [{"role": "user", "content": "t drill-0123456789ab"}]}
AUTH = {"Authorization": "Bearer bench"}  # the wire refuses a call without a key (401)


def _timed(client: httpx.Client, calls: int) -> list[float]:
    for _ in range(20):  # warm up
        client.post("/v1/chat/completions", json=BODY, headers=AUTH)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        client.post("/v1/chat/completions", json=BODY, headers=AUTH)
        times.append(time.perf_counter() - t)
    return times


def fake_cost(calls: int) -> dict[str, Any]:
    """(c), per call: a recording fake against a bare app on the same server stack."""
    global _BARE
    fake = RecordingFake("openai-chat", name="gpt", signed=True, control=False)
    with FakeServer(fake) as server, httpx.Client(base_url=server.url) as client:
        _BARE = client.post("/v1/chat/completions", json=BODY, headers=AUTH).content
        fake_times = _timed(client, calls)
    sock = bind_socket("127.0.0.1", 0)  # the fakes' own socket options (TCP_NODELAY)
    bare = uvicorn_server(_bare)  # type: ignore[arg-type]
    thread = threading.Thread(target=bare.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}") as client:
        for _ in range(200):  # until it answers (the thread is starting)
            try:
                client.post("/v1/chat/completions", json=BODY, headers=AUTH)
                break
            except httpx.TransportError:
                time.sleep(0.01)  # polling for the server to come up, not synchronisation
        bare_times = _timed(client, calls)
    bare.should_exit = True
    thread.join(timeout=10)
    sock.close()
    fake_ms = statistics.median(fake_times) * 1000
    bare_ms = statistics.median(bare_times) * 1000
    return {"calls": calls, "fake_median_ms": round(fake_ms, 3),
            "bare_median_ms": round(bare_ms, 3), "added_ms": round(fake_ms - bare_ms, 3)}


def held_cost(held: int, hold_s: float = 1.0) -> dict[str, Any]:
    """(c), held answers: ``held`` calls wait at the fake for ``hold_s``; the process's CPU
    time over that wait (busy waiting would burn a core)."""
    tag = "drill-0123456789ab"
    fake = RecordingFake("openai-chat", name="gpt", signed=True, control=False)
    fake.script_tag(tag, "conformant", hold=True)
    codes: list[int] = []
    with FakeServer(fake) as server, httpx.Client(
            base_url=server.url, timeout=30,
            limits=httpx.Limits(max_connections=held + 5)) as client:
        def call() -> None:
            codes.append(client.post("/v1/chat/completions", json=BODY,
                                     headers=AUTH).status_code)
        callers = [threading.Thread(target=call) for _ in range(held)]
        for thread in callers:
            thread.start()
        fake.wait_arrival(tag, 30, count=held)  # every call waits at the gate
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(hold_s)  # the measured interval itself: nothing to synchronise
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        fake.let_go(tag)
        for thread in callers:
            thread.join(timeout=30)
    return {"held": held, "hold_s": hold_s, "cpu_s": round(cpu, 4),
            "cpu_share": round(cpu / wall, 4), "answered": codes.count(200)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=36, help="intents at work at once")
    parser.add_argument("--settle", type=float, default=None,
                        help="timeouts.settle_s, s (default: the profile's, 5 s)")
    parser.add_argument("--drills", default="all")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--held", type=int, default=50)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    trials, calls, held = (1, 20, 5) if args.smoke else (args.trials, args.calls, args.held)
    drills = ["control", "hang", "late"] if args.smoke else parse_names(args.drills)
    settle = 0.3 if args.smoke else args.settle
    with tempfile.TemporaryDirectory(prefix="bench-drill-") as work:
        result = {"round": one_round(trials, drills, args.concurrency, settle, Path(work)),
                  "fakes": fake_cost(calls), "held": held_cost(held)}
    print(json.dumps(result, indent=2))
    if args.smoke:
        return
    r, f, h = result["round"], result["fakes"], result["held"]
    again = (f"; {r['drilled_again']} intents drilled again after the round: the slowest "
             f"of each round {r['rounds_s']} s, summed" if r["drilled_again"] else "")
    print(f"(a) CLI wall {r['cli_wall_s']} s / slowest intent {r['slowest_intent_s']} s "
          f"(settle included{again}) = {r['ratio']} (goal <= 1.5; without the process start "
          f"and imports: {r['run_ratio']}) for {r['intents']} intents, {r['concurrency']} at "
          f"work at once; not passed: {r['not_passed'] or 0}")
    print(f"(c) fake: {f['added_ms']} ms added per call, median (goal <= 1 ms); "
          f"{h['held']} held answers for {h['hold_s']} s cost {h['cpu_share']} of a core "
          "(goal <= 0.05)")
    print(f"drills: {', '.join(drills)} (of {', '.join(NAMES)})")


if __name__ == "__main__":
    main()
