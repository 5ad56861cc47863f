"""Shard benchmark: explore split over N jobs against one run, a shard's overhead, and the merge.

    python -m bench.shard [--smoke] [--shards 2] [--budget 10000] [--seed 7]
                          [--merge-shards 100] [--per-shard 1000] [--repeat 3]

Every run is a ``failover-harness`` process, as a CI job runs it; the N shards start at once.

1. explore on a mutant (``mutant:last-write-wins``), measured in the same run:
   - the whole budget: ``--workload double-click``, which cannot reach this mutant's flaw, so
     every one of ``--budget`` schedules runs: one run, against N shards (``--shard K/N``: a
     contiguous range each) at once, then ``failover-harness merge``;
   - the first violation: ``--workload claims``: one run stops at the seed's first violating
     schedule; the shards stop at their own first (or the end of their range), and the merge
     waits for every shard, then takes the first in range order — the same schedule.
   Each prints the wall time of one run, of the N shards, of the merge, and the ratio
   (shards + merge) / one run. Goal (issue 35): close to 1/N given N free cores; on a 2-core
   machine, report the ratio for 2 shards.
2. A shard's overhead: start-up (a 1-schedule ``explore``: interpreter, imports, store, report
   folder) and the merge (the ``merge`` process of the N folders above).
3. The merge of ``--merge-shards`` shard folders of ``--per-shard`` trial records each (one
   trial series of 100 × 1,000 trials, from a real shard's results.json, its records numbered
   as the round-robin split numbers them): reading and judging them in process
   (``read_shards`` + ``merged_events``), and the whole ``failover-harness merge`` command
   (with rendering), the best and the median of ``--repeat``. Goal: ≤ 2 s.

``--smoke``: tiny sizes, every part runs, no goal judged (CI keeps the script from rotting).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.campaign.merge import MergeSettings, merged_events, read_shards
from harness.scenarios.events import TrialSeries

ROOT = Path(__file__).resolve().parents[1]
MUTANT = "mutant:last-write-wins"
MERGE_GOAL_S = 2.0


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", *args]


def at_once(commands: list[list[str]], cwd: Path) -> tuple[float, list[int]]:
    """Run ``commands`` as processes started together; the wall time until the last ends,
    and their exit codes. A crash (a traceback) stops the bench."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    start = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for c in commands]
    outputs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - start
    for command, proc, output in zip(commands, procs, outputs, strict=True):
        if "Traceback" in output or proc.returncode == 2:
            raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{output}")
    return wall, [p.returncode for p in procs]


def document(report_dir: Path) -> dict[str, Any]:
    return dict(json.loads((report_dir / "latest" / "results.json").read_text("utf-8")))


def explore_case(label: str, workload: str, *, shards: int, budget: int, seed: int,
                 tmp: Path) -> float:
    """One explore search as one run and as ``shards`` shards + merge; prints the figures and
    returns the merge's wall time."""
    base = ["explore", "--target", MUTANT, "--workload", workload, "--budget", str(budget),
            "--seed", str(seed), "--no-shrink", "--quiet"]
    folder = tmp / label.replace(" ", "-")
    one_s, [one_code] = at_once([cli(*base, "--report-dir", str(folder / "one"))], tmp)
    parts = [folder / f"shard-{k}" for k in range(1, shards + 1)]
    shards_s, _ = at_once([cli(*base, "--shard", f"{k}/{shards}", "--report-dir", str(part))
                           for k, part in enumerate(parts, start=1)], tmp)
    merge_s, [merge_code] = at_once([cli("merge", *map(str, parts), "--report-dir",
                                         str(folder / "merged"), "--quiet")], tmp)
    one, merged = document(folder / "one"), document(folder / "merged")
    same = (one_code, one["verdict"]) == (merge_code, merged["verdict"])
    differs = "" if same else f" — DIFFERS from one run: {one['verdict']}"
    print(f"  {label:<16} one run {one_s:6.2f} s   {shards} shards at once {shards_s:6.2f} s "
          f"+ merge {merge_s:5.2f} s   ratio {(shards_s + merge_s) / one_s:4.2f} "
          f"(shards alone {shards_s / one_s:4.2f}; ideal {1 / shards:4.2f})   "
          f"verdict {merged['verdict']}{differs}")
    return merge_s


def startup(tmp: Path) -> float:
    """The wall time of a 1-schedule explore: what a shard pays before its first schedule."""
    wall, _ = at_once([cli("explore", "--target", MUTANT, "--workload", "double-click",
                           "--budget", "1", "--seed", "1", "--quiet", "--report-dir",
                           str(tmp / "startup"))], tmp)
    return wall


# -- the merge of many shards ------------------------------------------------------------------
def template(tmp: Path) -> dict[str, Any]:
    """A real shard's results.json: shard 1/2 of a trial series of double_click."""
    at_once([cli("scenarios", "run", str(ROOT / "scenarios" / "double_click.yaml"),
                 "--trials", "4", "--shard", "1/2", "--report-dir", str(tmp / "template"),
                 "--quiet")], tmp)
    found = document(tmp / "template")
    evidence = found["shard"]["evidence"][0]
    assert evidence and evidence["kind"] == "trial_series", found["shard"]
    return found


def write_shards(found: dict[str, Any], shards: int, per_shard: int, out: Path) -> list[Path]:
    """``shards`` report folders of one series, ``per_shard`` trial records each: trial ``p``
    is shard ``p mod N + 1``'s, as the round-robin split gives it."""
    record = found["shard"]["evidence"][0]["records"][0]
    folders = []
    for k in range(1, shards + 1):
        doc = copy.deepcopy(found)
        doc["shard"].update(index=k, total=shards)
        evidence = doc["shard"]["evidence"][0]
        evidence["head"]["trials"] = shards * per_shard
        evidence["records"] = [dict(record, trial=k - 1 + shards * i) for i in range(per_shard)]
        folder = out / f"shard-{k}"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(doc), "utf-8")
        folders.append(folder)
    return folders


def merge_many(shards: int, per_shard: int, tmp: Path, *, judge: bool, repeat: int) -> None:
    """The merge of ``shards`` folders, ``repeat`` times (the best and the median: the shared
    machine's load moves single figures by 2×)."""
    folders = write_shards(template(tmp), shards, per_shard, tmp / "many")
    in_process, command = [], []
    trials = 0
    for n in range(repeat):
        start = time.perf_counter()
        events = merged_events(read_shards(MergeSettings(folders=tuple(folders))))
        in_process.append(time.perf_counter() - start)
        [series] = [e for e in events if isinstance(e, TrialSeries)]
        trials = sum(p.trials for p in series.patterns)
        wall, _ = at_once([cli("merge", *map(str, folders), "--report-dir",
                               str(tmp / f"many-merged-{n}"), "--quiet")], tmp)
        command.append(wall)
    verdict = ""
    if judge:
        verdict = ("  ok" if min(command) <= MERGE_GOAL_S
                   else f"  MISSED (goal ≤ {MERGE_GOAL_S} s)")
    print(f"  {shards} shards × {per_shard} trial records ({trials} trials), best (median) of "
          f"{repeat}: read + judged in process {min(in_process):5.2f} s "
          f"({statistics.median(in_process):5.2f}); the merge command (start-up, rendering "
          f"included) {min(command):5.2f} s ({statistics.median(command):5.2f}){verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no goal judged")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--budget", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--merge-shards", type=int, default=100)
    parser.add_argument("--per-shard", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="merges measured (best, median)")
    args = parser.parse_args()
    budget = 20 if args.smoke else args.budget
    merge_shards, per_shard = (3, 10) if args.smoke else (args.merge_shards, args.per_shard)
    load = os.getloadavg()[0]
    print(f"shard bench: {os.cpu_count()} cores, load average {load:.1f}; {args.shards} shards, "
          f"explore budget {budget}, seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="bench-shard-") as name:
        tmp = Path(name)
        print(f"explore {MUTANT}:")
        merges = [explore_case("whole budget", "double-click", shards=args.shards,
                               budget=budget, seed=args.seed, tmp=tmp),
                  explore_case("first violation", "claims", shards=args.shards,
                               budget=budget, seed=args.seed, tmp=tmp)]
        print(f"per shard: start-up {startup(tmp):5.2f} s (a 1-schedule explore process); "
              f"merge of {args.shards} folders {min(merges):5.2f} s (a merge process)")
        print("merge:")
        merge_many(merge_shards, per_shard, tmp, judge=not args.smoke,
                   repeat=1 if args.smoke else args.repeat)


if __name__ == "__main__":
    main()
