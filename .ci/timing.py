"""Print a test run's wall time and its ten slowest tests, from the JUnit XML pytest wrote.

Usage: python .ci/timing.py JUNIT_XML WALL_SECONDS GOAL_SECONDS LABEL [TIMELINE]
A time is a benchmark, never a gate (the CI machine is shared): over the goal is a warning line,
and this script always exits 0. TIMELINE, the file HARNESS_TEST_TIMELINE named for the run
(tests/_timeline.py), adds where the run's CPU went (before the first test, in the tests and
their subprocesses, in the embedded PostgreSQL; the ten costliest test files), then when each
worker finished and what the last one ran last.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def main(argv: list[str]) -> int:
    junit, wall, goal, label = argv[0], float(argv[1]), float(argv[2]), argv[3]
    try:
        cases = list(ET.parse(junit).getroot().iter("testcase"))
    except (OSError, ET.ParseError) as exc:
        print(f"timing: no test times ({exc})")
        cases = []
    minutes = f"{int(wall // 60)} min {int(wall % 60)} s"
    print(f"== {label}: {minutes} wall, {len(cases)} tests")
    if wall > goal:
        print(f"warning: {label} took {minutes}, over its {goal / 60:.0f} min goal "
              "(docs/testing.md); a benchmark, not a failure")
    slowest = sorted(cases, key=lambda c: -float(c.get("time") or 0))[:10]
    if slowest:
        print("slowest ten (setup + call + teardown):")
    for case in slowest:
        seconds, test = float(case.get("time") or 0), f"{case.get('classname')}::{case.get('name')}"
        print(f"  {seconds:6.1f} s  {test}")
    if len(argv) > 4:
        workers(argv[4])
    return 0


def workers(timeline: str) -> None:
    """Per worker: its tests, busy seconds and when it finished (seconds after the first test
    began); then the last tests of the worker that finished last."""
    runs: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    entries: list[dict[str, object]] = []
    try:
        with open(timeline, encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                entries.append(entry)
                if not entry.get("summary") and not entry.get("session"):
                    runs[entry["worker"]].append((entry["start"], entry["end"], entry["test"]))
    except (OSError, ValueError, KeyError) as exc:
        print(f"timing: no timeline ({exc})")
        return
    cpu(entries)
    if not runs:
        print("timing: an empty timeline")
        return
    began = min(start for tests in runs.values() for start, _, _ in tests)
    print("workers (tests, busy, finished after the first test began):")
    for worker, tests in sorted(runs.items()):
        busy = sum(end - start for start, end, _ in tests)
        done = max(end for _, end, _ in tests) - began
        print(f"  {worker:>5}  {len(tests):5d} tests  {busy:6.0f} s busy  done at {done:5.0f} s")
    last = max(runs, key=lambda w: max(end for _, end, _ in runs[w]))
    print(f"the last to finish, {last}, ran last:")
    for start, end, test in sorted(runs[last])[-5:]:
        print(f"  {start - began:5.0f}-{end - began:5.0f} s  {test}")


def cpu(entries: list[dict[str, object]]) -> None:
    """CPU seconds of the run (tests/_timeline.py): in all, by the test processes (each xdist
    worker: its own, its reaped subprocesses', its embedded PostgreSQL's exited backends, its
    fork server's reaped services);
    under xdist the controller's line, whose reaped children are the workers and the zygote
    with the fork servers' services; of that, in the tests themselves, before the first test,
    the controller, and outside any test (session servers, the services of the fork servers);
    then the ten test files that cost the most."""
    def seconds(entry: dict[str, object], key: str) -> float:
        value = entry.get(key, 0)
        return float(value) if isinstance(value, int | float) else 0.0

    keys = ("cpu", "children", "pg", "forked")
    # a worker's session teardown (its servers stopping) is outside any test
    tests = [e for e in entries if not e.get("summary") and not e.get("session")]
    if not any("cpu" in e for e in tests):
        return
    workers = {e.get("worker") for e in tests}  # not the xdist controller's
    ends = [e for e in entries if e.get("summary") and e.get("worker") in workers]
    controller = [e for e in entries if e.get("summary") and e.get("worker") not in workers]
    in_tests = sum(seconds(e, key) for e in tests for key in keys)
    before = sum(seconds(e, "cpu_before_tests") for e in ends)
    total = sum(seconds(e, key) for e in ends for key in keys)
    own = 0.0
    if controller:  # under xdist: its children are the workers and the zygote (the services)
        own = seconds(controller[0], "cpu")
        total = own + seconds(controller[0], "children") + sum(seconds(e, "pg") for e in ends)
    if len(ends) == len(workers):
        print(f"CPU: {total:.0f} s = in the tests {in_tests:.0f} + before the first test "
              f"{before:.0f} + the xdist controller {own:.0f} + outside any test "
              f"{total - in_tests - before - own:.0f}")
    else:  # a worker that ended early wrote no summary line
        print(f"CPU: in the tests {in_tests:.0f} s (no summary of every worker)")
    files: dict[str, float] = defaultdict(float)
    for entry in tests:
        files[str(entry["test"]).split("::", 1)[0]] += sum(seconds(entry, key) for key in keys)
    print("costliest files (CPU s):")
    for name, spent in sorted(files.items(), key=lambda item: -item[1])[:10]:
        print(f"  {spent:6.0f} s  {name}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
