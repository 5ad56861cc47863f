"""`failover-harness drill` on the example services of examples/drill/, with their own profiles,
every drill at 20 trials (tagged intents concurrently): the correct service passes everything;
each flawed twin fails the promise its bug breaks, at a rate the report gives, and no other.

The rates are timing races on a loaded machine; the floors below leave room (what they were
measured at is beside each). A promise a twin may also break for the same bug is named with it
(e.g. a queue that redelivers a running job starts a call beyond the hedge AND bills it)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.drill.conftest import EXAMPLES, ROOT, provider_env

pytestmark = pytest.mark.slow  # each run: a service start and 9 drills x 20 intents (10-30 s)

TRIALS = 20
CLI_TIMEOUT_S = 600
Rates = dict[str, dict[str, dict[str, int]]]  # drill -> promise -> {held, broken, unknown, …}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def drill(start_service: Callable[..., Any], tmp_path: Path, script: str, profile: str,
          *args: str, reach: bool = True, drills: str = "all",
          trials: int = TRIALS) -> tuple[int, Rates, str, Path]:
    """Start ``script`` with its providers at two free ports, drill it with the CLI (a
    subprocess), and return (exit code, rates per drill and promise, output, results.json)."""
    primary, fallback = free_port(), free_port()
    env = provider_env(primary, fallback) if reach else provider_env(None, None)
    service = start_service(script, ["--timeout", "0.5", *args], env)
    report = tmp_path / f"report-{script}"
    cli_env = {**os.environ, "PRIMARY_PORT": str(primary), "FALLBACK_PORT": str(fallback),
               "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "drill", "--target", service.url,
         "--target-profile", str(EXAMPLES / f"{profile}.profile.yaml"), "--drills", drills,
         "--trials", str(trials), "--concurrency", str(trials), "--report-dir", str(report)],
        env=cli_env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, cwd=ROOT)
    results = report / "latest" / "results.json"
    rates: Rates = {}
    for event in json.loads(results.read_text("utf-8"))["events"]:
        if event["type"] == "drill_run":
            rates[event["drill"]] = {p["promise"]: p for p in event["promises"]}
    return done.returncode, rates, done.stdout + done.stderr, results


def broken(rates: Rates) -> dict[tuple[str, str], int]:
    return {(d, p): r["broken"] for d, promises in rates.items() for p, r in promises.items()
            if r["broken"]}


def test_the_correct_service_passes_every_drill(start_service: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    code, rates, out, _ = drill(start_service, tmp_path, "correct_service.py", "correct")
    assert code == 0, out
    assert set(rates) == {"control", "hang", "late", "5xx", "overload-429", "overload-529",
                          "reset", "stream-cut", "double-click"}
    assert broken(rates) == {}, out
    unknown = {(d, p): r["unknown"] for d, ps in rates.items() for p, r in ps.items()
               if r["unknown"]}
    assert unknown == {}, out
    for name, promises in rates.items():  # every intent judged on what the drill is about
        assert promises["one_job"]["held"] == TRIALS, name
        assert promises["one_winner"]["held"] == TRIALS, name
        assert promises["billed_within_bound"]["held"] == TRIALS, name
    for name in ("hang", "late", "double-click"):
        assert rates[name]["timeout_not_failure"]["held"] == TRIALS
    assert rates["stream-cut"]["cut_not_success"]["held"] == TRIALS


# script, profile, extra args, {(drill, promise): at least this many broken of 20}, the
# promises its bug may break anywhere (measured on the loaded 2-core machine in brackets)
TWINS = {
    "sdk-retries": ("sdk_retries_service.py", (), {
        ("hang", "billed_within_bound"): 18,  # [20/20]: 3 abandoned primary calls + fallback
        ("late", "billed_within_bound"): 18,  # [20/20]
        ("reset", "billed_within_bound"): 18,  # [20/20]: the SDK retries a reset too
        ("double-click", "billed_within_bound"): 18,  # [20/20]
    }, {"billed_within_bound"}),
    "timeout-fails": ("timeout_fails_service.py", (), {
        ("hang", "timeout_not_failure"): 16,  # [20/20]: "failed" for 0.1 s before the re-run
        ("double-click", "timeout_not_failure"): 16,  # [20/20]
        ("late", "one_winner"): 10,  # [19/20]: the fallback's result, then the late primary's
    }, {"timeout_not_failure", "one_winner", "completed"}),
    "no-abort": ("no_abort_service.py", (), {
        ("late", "one_winner"): 16,  # [20/20]: the fallback's reply replaced by the primary's
    }, {"one_winner"}),
}


@pytest.mark.parametrize("twin", sorted(TWINS))
def test_a_flawed_twin_fails_its_promise(start_service: Callable[..., Any], tmp_path: Path,
                                         twin: str) -> None:
    script, args, floors, may_break = TWINS[twin]
    code, rates, out, _ = drill(start_service, tmp_path, script, twin, *args)
    assert_twin(code, rates, out, floors, may_break)


def test_the_redis_queue_twin_bills_a_redelivered_job(start_service: Callable[..., Any],
                                                      tmp_path: Path, redis_url: str) -> None:
    code, rates, out, _ = drill(start_service, tmp_path, "redis_queue_service.py",
                                "redis-queue", "--redis", redis_url)
    assert_twin(code, rates, out, {
        ("hang", "within_hedge"): 14,  # [19/20]: a 2nd primary call while the 1st waits
        ("hang", "billed_within_bound"): 14,  # [19/20]
        ("late", "billed_within_bound"): 14,  # [19/20]
        ("double-click", "billed_within_bound"): 14,  # [20/20]
    }, {"within_hedge", "billed_within_bound"})


def assert_twin(code: int, rates: Rates, out: str, floors: dict[tuple[str, str], int],
                may_break: set[str]) -> None:
    assert code == 1, out
    found = broken(rates)
    for (name, promise), floor in floors.items():
        assert found.get((name, promise), 0) >= floor, (name, promise, found, out)
        # the report gives the rate, in words (of the intents judged on it)
        assert re.search(f"broken in {found[(name, promise)]} of [0-9]+ intents?", out), out
    others = {key: n for key, n in found.items() if key[1] not in may_break}
    assert others == {}, out  # no other promise is (falsely) said to be broken
    assert all(r["broken"] == 0 for ps in rates.values() for p, r in ps.items()
               if p == "one_job"), out


def test_a_service_that_never_calls_the_fakes_is_unknown(start_service: Callable[..., Any],
                                                          tmp_path: Path) -> None:
    """OPENAI_BASE_URL and ANTHROPIC_BASE_URL unset: the service calls the SDKs' defaults (no
    network here), the fakes see nothing, and the verdict is unknown (exit 3), never a pass,
    with a fix naming the variables and the fakes' URLs."""
    code, _, out, results = drill(start_service, tmp_path, "correct_service.py", "correct",
                                  reach=False, drills="control,hang", trials=2)
    assert code == 3, out
    events = [e for e in json.loads(results.read_text("utf-8"))["events"]
              if e["type"] == "drill_run"]
    assert {e["verdict"] for e in events} == {"unknown"}
    fixes = " ".join(u["fix"] for e in events for u in e["unknowns"])
    assert "OPENAI_BASE_URL=http://127.0.0.1:" in fixes and "ANTHROPIC_BASE_URL=" in fixes
