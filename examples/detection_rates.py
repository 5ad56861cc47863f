"""Measure how often each detection scenario catches each flaw of the example gap service.

    python examples/detection_rates.py [--trials 20] [--seed 0]

Starts every configuration below as its own process on a free loopback port, runs the matching
scenario of scenarios/detection/ through examples/jobs.profile.yaml for ``--trials`` trials per
arrival pattern, and prints a Markdown table: per configuration and pattern, how many trials
broke a promise and which checkers caught it ("k of n"). The correct service is the control: it
must stay at 0. The figures in docs/detection.md come from this script.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from harness.scenarios.checkers.losers import ordered
from harness.scenarios.loader import load_scenario
from harness.scenarios.targets import open_target
from harness.scenarios.trials import run_trials

HERE = Path(__file__).resolve().parent
DETECTION = HERE.parent / "scenarios" / "detection"
PROFILE = HERE / "jobs.profile.yaml"

CASES = [  # (service, its options, scenario)
    ("correct", [], "duplicate_arrivals"),
    ("correct", [], "handler_failure"),
    ("correct", [], "replay_fidelity"),
    ("correct", ["--busy-status", "423"], "duplicate_arrivals"),
    ("gap", ["--flaws", "store-gap"], "duplicate_arrivals"),
    ("gap", ["--flaws", "store-gap", "--store-ms", "2"], "duplicate_arrivals"),
    ("gap", ["--flaws", "no-lock"], "duplicate_arrivals"),
    ("gap", ["--flaws", "inflight-only"], "duplicate_arrivals"),
    ("gap", ["--flaws", "conflict-losers"], "duplicate_arrivals"),
    ("gap", ["--flaws", "sticky-lock"], "handler_failure"),
    ("gap", ["--flaws", "cache-5xx"], "handler_failure"),
    ("gap", ["--flaws", "mutated-fingerprint"], "replay_fidelity"),
    ("gap", ["--flaws", "raw-body-key"], "replay_fidelity"),
    ("gap", ["--flaws", "no-replay-header"], "replay_fidelity"),
    ("correct", [], "mismatched_body"),
    ("gap", ["--flaws", "no-fingerprint"], "mismatched_body"),
    ("gap", ["--flaws", "raw-body-key"], "mismatched_body"),
]


def start(kind: str, options: list[str], folder: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / f"{kind}_service.py"), "--port", "0",
         "--db", str(folder / f"{kind}.db"), *options],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip().removeprefix("listening on ")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # poll for readiness
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            continue
    process.terminate()
    raise SystemExit(f"{kind}_service {' '.join(options)} did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", default=None,
                        help="measure only the cases of this detection scenario")
    args = parser.parse_args()
    print("| service | scenario | pattern | trials broken | caught by (trials) | loser answers |")
    print("|---|---|---|---|---|---|")
    for kind, options, name in CASES:
        if args.scenario and name != args.scenario:
            continue
        scenario = load_scenario(DETECTION / f"{name}.yaml")
        with tempfile.TemporaryDirectory() as folder:
            process, url = start(kind, options, Path(folder))
            try:
                with open_target(url, profile=PROFILE) as target:
                    ts = run_trials(scenario, target, seed=args.seed, trials=args.trials)
            finally:
                process.terminate()
                process.wait(timeout=10)
        label = f"{kind} {' '.join(options)}".strip()
        failures = ts.failures()
        for pattern in ts.patterns:
            caught = ", ".join(f"{c} ({rates[pattern].failed})" for c, rates in failures.items()
                               if rates[pattern].failed) or "—"
            losers = ", ".join(f"{c} {n}" for c, n in ordered(ts.histogram(pattern)))
            print(f"| {label} | {name} | {pattern} | {ts.violated(pattern)} of "
                  f"{len(ts.runs[pattern])} | {caught} | {losers or '—'} |", flush=True)


if __name__ == "__main__":
    main()
