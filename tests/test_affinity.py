"""tests/_affinity.py: an xdist worker keeps to one core, and so does what it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _affinity

ROOT = Path(__file__).resolve().parents[1]
CORES = _affinity.run_cores()  # in a pinned worker: the run's cores, not the worker's one
needs_two_cores = pytest.mark.skipif(len(CORES) < 2, reason="pinning needs two usable cores "
                                     "and os.sched_setaffinity (Linux)")

# A process on the run's cores (argv[2]; the worker running this test has one) that starts a
# thread, asks to be pinned as argv[1], then reports the cores of each of its threads (the one
# started before, the main one, one started after) and of a child process.
PROBE = """
import json, os, subprocess, sys, threading
os.sched_setaffinity(0, json.loads(sys.argv[2]))
from tests._affinity import pin_worker
go, seen = threading.Event(), {}
def record(name):
    go.wait(10)
    seen[name] = sorted(os.sched_getaffinity(0))
before = threading.Thread(target=record, args=("thread started before",))
before.start()
core = pin_worker(sys.argv[1])
go.set()
before.join(10)
after = threading.Thread(target=record, args=("thread started after",))
after.start()
after.join(10)
seen["main thread"] = sorted(os.sched_getaffinity(0))
child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                       capture_output=True, text=True, check=True, timeout=30)
seen["child process"] = json.loads(child.stdout)
print(json.dumps({"core": core, "seen": seen}))
"""
NAMES = ("thread started before", "thread started after", "main thread", "child process")


def probe(worker_id: str, **env: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE, worker_id, json.dumps(CORES)], cwd=ROOT,
                          timeout=60, capture_output=True, text=True, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@needs_two_cores
@pytest.mark.parametrize("number", [0, 1, 3])
def test_a_worker_and_what_it_starts_keep_to_one_core_chosen_by_its_number(number: int) -> None:
    expected = CORES[number % len(CORES)]
    result = probe(f"gw{number}", **{_affinity.ENV: "1"})
    assert result["core"] == expected
    assert result["seen"] == {name: [expected] for name in NAMES}


@needs_two_cores
@pytest.mark.parametrize(("worker_id", "env"), [("gw2", {_affinity.ENV: "0"}),
                                                 ("gw2", {_affinity.ENV: ""}),
                                                 ("master", {_affinity.ENV: "1"}),
                                                 ("gw", {_affinity.ENV: "1"}),
                                                 ("gw1x", {_affinity.ENV: "1"})])
def test_nothing_is_pinned_unless_turned_on_for_a_worker(worker_id: str,
                                                           env: dict[str, str]) -> None:
    result = probe(worker_id, **env)
    assert result["core"] is None
    assert result["seen"] == {name: CORES for name in NAMES}


@needs_two_cores
def test_this_xdist_worker_runs_on_its_core_only_when_asked() -> None:
    """The wiring (tests/conftest.py): with HARNESS_TEST_PIN=1 a worker of this run is pinned
    before its first test; without it, it keeps every core of the run."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("not an xdist worker")
    number = int(worker.removeprefix("gw"))
    expected = {CORES[number % len(CORES)]} if os.environ.get(_affinity.ENV) == "1" else set(CORES)
    assert os.sched_getaffinity(0) == expected


# A process on the run's cores (argv[1]) with a thread of its own, which enters one_core() as
# the xdist worker PYTEST_XDIST_WORKER names, starts a thread inside, and reports the cores of
# each thread inside the block and after it.
ONE_CORE_PROBE = """
import json, os, sys, threading
os.sched_setaffinity(0, json.loads(sys.argv[1]))
from tests._affinity import one_core
ask, seen = threading.Condition(), {}
asked = []
def answer():  # the thread's own cores, each time the main thread asks
    with ask:
        while True:
            ask.wait_for(lambda: asked, timeout=10)
            moment = asked.pop()
            if moment == "end":
                return
            seen[f"thread started before, {moment}"] = sorted(os.sched_getaffinity(0))
            ask.notify_all()
def cores_of_before(moment):
    with ask:
        asked.append(moment)
        ask.notify_all()
        ask.wait_for(lambda: f"thread started before, {moment}" in seen, timeout=10)
before = threading.Thread(target=answer)
before.start()
inside = {}
with one_core() as core:
    cores_of_before("inside")
    seen["main thread, inside"] = sorted(os.sched_getaffinity(0))
    started = threading.Thread(target=lambda: inside.update(cores=sorted(os.sched_getaffinity(0))))
    started.start()
    started.join(10)
    seen["thread started inside, inside"] = inside["cores"]
    keeps = threading.Event()
    later = threading.Thread(target=keeps.wait, args=(10,))
    later.start()
cores_of_before("after")
seen["main thread, after"] = sorted(os.sched_getaffinity(0))
seen["thread started inside, after"] = sorted(os.sched_getaffinity(later.native_id))
keeps.set()
with ask:
    asked.append("end")
    ask.notify_all()
print(json.dumps({"core": core, "seen": seen}))
"""


@needs_two_cores
@pytest.mark.parametrize(("worker", "number"), [("gw0", 0), ("gw3", 3), ("", 0)])
def test_a_block_keeps_the_process_to_one_core_and_gives_the_cores_back(worker: str,
                                                                       number: int) -> None:
    done = subprocess.run([sys.executable, "-c", ONE_CORE_PROBE, json.dumps(CORES)], cwd=ROOT,
                          timeout=60, capture_output=True, text=True,
                          env={**os.environ, "PYTEST_XDIST_WORKER": worker})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    expected = CORES[number % len(CORES)]
    assert result["core"] == expected
    assert result["seen"] == {
        "thread started before, inside": [expected], "main thread, inside": [expected],
        "thread started inside, inside": [expected],
        "thread started before, after": CORES, "main thread, after": CORES,
        "thread started inside, after": CORES}
