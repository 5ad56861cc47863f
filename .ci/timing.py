"""Print a test run's wall time and its ten slowest tests, from the JUnit XML pytest wrote.

Usage: python .ci/timing.py JUNIT_XML WALL_SECONDS GOAL_SECONDS LABEL
A time is a benchmark, never a gate (the CI machine is shared): over the goal is a warning line,
and this script always exits 0.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
