""".ci/timing.py: CI prints each test run's wall time and its ten slowest tests; a time over the
goal is one warning line and never fails the run (a shared machine's time is a benchmark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_timeline_shows_when_each_worker_finished_and_what_the_last_ran_last(
        tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """HARNESS_TEST_TIMELINE: the tests' own plugin writes a line per test, and timing.py says
    which worker finished last and what it ran last (the run's critical path)."""
    timeline = tmp_path / "timeline.jsonl"
    pytester.makeconftest('pytest_plugins = ["tests._timeline"]')
    # a session fixture whose teardown (a server stopping) costs 0.3 s of CPU: not test_b's
    pytester.makepyfile(test_some=(
        "import time, pytest\n\n@pytest.fixture(scope='session')\ndef server():\n"
        "    yield\n    until = time.process_time() + 0.3\n"
        "    while time.process_time() < until: pass\n\n"
        "def test_a(server): pass\n\ndef test_b(): pass\n"))
    monkeypatch.setenv("HARNESS_TEST_TIMELINE", str(timeline))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test may run on one
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0
    entries = [json.loads(line) for line in timeline.read_text("utf-8").splitlines()]
    lines, session, summaries = entries[:-2], entries[-2], entries[-1:]
    assert [(e["worker"], e["test"].split("::")[1]) for e in lines] == [("main", "test_a"),
                                                                        ("main", "test_b")]
    assert all(e["start"] <= e["end"] for e in lines)
    assert all(e[key] >= 0 for e in lines for key in ("cpu", "children", "pg"))
    assert session["session"] and session["start"] == lines[1]["end"] <= session["end"]
    assert session["cpu"] >= 0.3 > lines[1]["cpu"], entries  # the teardown's, not test_b's
    assert [(e["worker"], e["summary"]) for e in summaries] == [("main", True)]
    assert 0 < summaries[0]["cpu_before_tests"] <= summaries[0]["cpu"]
    with timeline.open("a", encoding="utf-8") as more:  # a second worker that ends last
        more.write(json.dumps({"worker": "gw1", "test": "t.py::test_late",
                               "start": lines[0]["start"], "end": lines[1]["end"] + 60}) + "\n")
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest"/></testsuites>')
    out = timing(str(junit), "70", "300", "run", str(timeline)).stdout
    assert "   gw1      1 tests" in out and "  main      2 tests" in out, out
    assert out.count("CPU: ") == 1 and "  test_some.py" in out, out
    assert "teardown" not in out and "   gw1      1 tests" in out, out  # no test's, no run
    assert out.splitlines()[-2:] == ["the last to finish, gw1, ran last:",
                                     out.splitlines()[-1]]
    assert out.splitlines()[-1].endswith("t.py::test_late"), out
    assert "timing: no timeline" in timing(str(junit), "1", "300", "run",
                                           str(tmp_path / "none")).stdout
