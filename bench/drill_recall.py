"""The twins' recall (issue 29, benchmark b): the drill on every example service of
examples/drill/, each twin's rule broken in >= 95 % of the intents of its drills, every correct
example's promises broken in 0 %.

    python -m bench.drill_recall [--trials 10] [--twins correct,brief-failed,…]
                                 [--redis redis://…] [--smoke]

Each example is started on loopback (its README's command, ``--timeout 0.5``) with its providers
at two free ports, drilled with the CLI (``failover-harness drill --drills all``, every intent
at once), and judged from its ``results.json``. ``recall()`` is the pure part: bench/drill.py
(or a test) may call it with rates it measured itself. The Redis twins need a server: ``--redis``
or ``HARNESS_REDIS_URL``; without one they are reported as not measured, never as passed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._servers import free_port

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "drill"
GOAL = 0.95  # a twin's rule broken in at least this share of its drills' intents
#: drill -> promise -> counts (held, broken, unknown, …), as a drill_run event gives them
Rates = dict[str, dict[str, dict[str, int]]]
#: the promises' names before the drill helper's rename (CONTRACT.md), read as the new ones
RENAMED = {"one_job": "one_job_per_intent", "one_winner": "one_winner_per_job"}


@dataclass(frozen=True)
class Twin:
    """An example service: its script and options, and the rule it breaks on which drills
    (``promise`` None: a correct example, every promise must hold)."""

    script: str
    args: tuple[str, ...] = ()
    promise: str | None = None
    drills: tuple[str, ...] = ()
    redis: bool = False


TIMEOUTS = ("hang", "late", "double-click")
#: --smoke: the whole path (start, drill, judge, recall) on a correct example and one twin
SMOKE_TWINS = ("correct", "timeout-fails")
TWINS = {
    "correct": Twin("correct_service.py"),
    "sdk-retries": Twin("sdk_retries_service.py", promise="billed_within_bound",
                        drills=("hang", "late", "reset", "double-click")),
    "sdk-retry-unresolved": Twin("sdk_retries_service.py", promise="within_hedge",
                                 drills=TIMEOUTS),
    "timeout-fails": Twin("timeout_fails_service.py", promise="timeout_not_failure",
                          drills=TIMEOUTS),
    "no-abort": Twin("no_abort_service.py", promise="one_winner_per_job", drills=("late",)),
    "redis-queue": Twin("redis_queue_service.py", promise="within_hedge", drills=TIMEOUTS,
                        redis=True),
    "redis-redelivery": Twin("redis_redelivery_service.py", promise="one_winner_per_job",
                             drills=("control", "5xx", "overload-429", "hang"), redis=True),
    "brief-failed": Twin("brief_failed_service.py", promise="timeout_not_failure",
                         drills=TIMEOUTS),
    "check-then-insert": Twin("correct_service.py", ("--defect", "check-then-insert"),
                              promise="one_job_per_intent", drills=("double-click",)),
}


def _name(promise: str) -> str:
    return RENAMED.get(promise, promise)


def recall(rates: dict[str, Rates | str]) -> dict[str, dict[str, Any]]:
    """Per example: ``broken`` and ``judged`` intents of its rule on its drills (a correct one:
    of every promise on every drill), ``share``, and ``verdict`` pass | fail | unknown (a
    string instead of rates: why it was not measured; or no intent judged on the rule)."""
    out: dict[str, dict[str, Any]] = {}
    for name, measured in rates.items():
        twin = TWINS[name]
        if isinstance(measured, str):
            out[name] = {"verdict": "unknown", "reason": measured}
            continue
        broken = judged = 0
        for drill, promises in measured.items():
            if twin.promise is not None and drill not in twin.drills:
                continue
            for promise, counts in promises.items():
                if twin.promise is None or _name(promise) == twin.promise:
                    broken += counts.get("broken", 0)
                    judged += counts.get("broken", 0) + counts.get("held", 0)
        share = broken / judged if judged else None
        if share is None:
            verdict, reason = "unknown", f"no intent judged on {twin.promise or 'any promise'}"
        elif twin.promise is None:
            verdict, reason = ("pass" if broken == 0 else "fail"), "every promise held"
        else:
            verdict = "pass" if share >= GOAL else "fail"
            reason = f"{twin.promise} on {', '.join(twin.drills)}"
        out[name] = {"verdict": verdict, "broken": broken, "judged": judged,
                     "share": None if share is None else round(share, 3), "reason": reason}
    return out


def rates_of(results: Path) -> Rates:
    """drill -> promise -> counts, from a drill's results.json."""
    events = json.loads(results.read_text("utf-8"))["events"]
    return {e["drill"]: {p["promise"]: p for p in e["promises"]}
            for e in events if e["type"] == "drill_run"}


def drill_twin(name: str, trials: int, folder: Path, redis_url: str | None,
               profile: Path | None = None) -> Rates | str:
    """Start the example ``name``, drill it with the CLI (every drill, ``trials`` intents each,
    all at once) and return its rates, or why there are none (a Redis twin without a Redis;
    the drill stopped on bad input)."""
    twin = TWINS[name]
    if twin.redis and not redis_url:
        return "not measured: no Redis (pass --redis or set HARNESS_REDIS_URL)"
    primary, fallback = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env.update(OPENAI_BASE_URL=f"http://127.0.0.1:{primary}/v1", PYTHONUNBUFFERED="1",
               ANTHROPIC_BASE_URL=f"http://127.0.0.1:{fallback}")
    args = [*twin.args, *(("--redis", str(redis_url)) if twin.redis else ())]
    service = subprocess.Popen(
        [sys.executable, str(EXAMPLES / twin.script), "--port", "0", "--timeout", "0.5",
         "--db", str(folder / f"{name}.db"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert service.stdout is not None
        url = next(line.split()[-1] for line in service.stdout
                   if line.startswith("listening on "))
        report = folder / f"report-{name}"
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "drill", "--target", url, "--target-profile",
             str(profile or EXAMPLES / f"{name}.profile.yaml"), "--drills", "all", "--trials",
             str(trials), "--concurrency", str(trials), "--report-dir", str(report)],
            env={**os.environ, "PRIMARY_PORT": str(primary), "FALLBACK_PORT": str(fallback),
                 "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900,
            cwd=ROOT)
        results = report / "latest" / "results.json"
        if not results.is_file():
            return f"not measured: the drill exited {done.returncode}: {done.stderr[-300:]}"
        return rates_of(results)
    finally:
        service.terminate()
        service.wait(timeout=10)
        if service.stdout is not None:
            service.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--twins", default=None,
                        help="comma-separated (default: every example; --smoke: "
                        f"{','.join(SMOKE_TWINS)})")
    parser.add_argument("--redis", default=os.environ.get("HARNESS_REDIS_URL"))
    parser.add_argument("--smoke", action="store_true",
                        help="2 trials of a correct example and one twin, no goal judged")
    args = parser.parse_args()
    twins = args.twins or ",".join(SMOKE_TWINS if args.smoke else TWINS)
    names = [n.strip() for n in twins.split(",") if n.strip()]
    unknown = sorted(set(names) - set(TWINS))
    if unknown:
        parser.error(f"--twins: no example named {', '.join(unknown)}; "
                     f"choose from {', '.join(TWINS)}")
    trials = 2 if args.smoke else args.trials
    with tempfile.TemporaryDirectory(prefix="bench-drill-recall-") as folder:
        if args.smoke:  # the path only: the examples at once (a measured run: one at a time)
            with ThreadPoolExecutor(len(names)) as pool:
                runs = {n: pool.submit(drill_twin, n, trials, Path(folder), args.redis)
                        for n in names}
                measured = {n: run.result() for n, run in runs.items()}
        else:
            measured = {n: drill_twin(n, trials, Path(folder), args.redis) for n in names}
    figures = recall(measured)
    print(json.dumps(figures, indent=2))
    if args.smoke:
        return
    for name, figure in figures.items():
        share = figure.get("share")
        shown = "-" if share is None else f"{figure['broken']}/{figure['judged']}"
        print(f"{name}: {figure['verdict']} ({figure['reason']}: broken {shown})")


if __name__ == "__main__":
    main()
