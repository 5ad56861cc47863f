""".ci/timing.py: CI prints each test run's wall time and its ten slowest tests; a time over the
goal is one warning line and never fails the run (a shared machine's time is a benchmark)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timing(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / ".ci" / "timing.py"), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_ten_slowest_tests_and_a_warning_over_the_goal(tmp_path: Path) -> None:
    cases = "".join(f'<testcase classname="tests.x.test_m" name="test_{n}" time="{n}.5"/>'
                    for n in range(12))
    junit = tmp_path / "junit.xml"
    junit.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    done = timing(str(junit), "361", "300", "the README's test command")
    lines = done.stdout.splitlines()
    assert done.returncode == 0
    assert lines[0] == "== the README's test command: 6 min 1 s wall, 12 tests"
    assert lines[1].startswith("warning: the README's test command took 6 min 1 s, over its "
                               "5 min goal")
    slowest = [line.split()[-1] for line in lines[3:]]
    assert slowest == [f"tests.x.test_m::test_{n}" for n in range(11, 1, -1)]
    assert "warning" not in timing(str(junit), "299", "300", "run").stdout


def test_a_missing_report_is_said_and_not_a_failure(tmp_path: Path) -> None:
    done = timing(str(tmp_path / "none.xml"), "12", "300", "run")
    assert done.returncode == 0
    assert "timing: no test times" in done.stdout and "0 tests" in done.stdout
