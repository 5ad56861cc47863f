"""tests/_watchdog.py: a server a test process started does not outlive it.

Real processes throughout: a test process killed with SIGKILL (no teardown of any kind), its
server's whole process group stopped by the watchdog and the folder removed; what was forgotten,
kept, or is a reused pid left alone; the server's own signal first, SIGKILL after the grace.
Processes that are not this test's children are waited for through pidfds, not by polling.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests._watchdog import ROOT, started_at

DEADLINE_S = 60.0  # the watchdog ends a server within its grace (10 s); a loaded machine is slow
SLEEPER = ["sleep", "600"]

TEST_PROCESS = """
import json, os, subprocess, sys
from tests import _watchdog
server = subprocess.Popen(["sh", "-c", "sleep 600 & echo $!; exec sleep 600"],
                          start_new_session=True, stdout=subprocess.PIPE, text=True)
server.stdout.readline()  # the background sleep runs
_watchdog.watch(server.pid, group=True)
_watchdog.folder(sys.argv[1])
print(json.dumps({"server": server.pid, "watchdog": _watchdog.watchdog_pid()}), flush=True)
sys.stdin.read()  # until killed
"""

needs_pidfd = pytest.mark.skipif(not hasattr(os, "pidfd_open") or not Path("/proc").is_dir(),
                                 reason="waits through pidfds and reads /proc (Linux)")


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[2]) == pgid:
                members.append(int(entry.name))
    return members


def wait_all_gone(pids: list[int]) -> list[int]:
    """Wait (up to DEADLINE_S) for every pid to exit; those still running."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    try:
        pending = set(fds)
        while pending:
            ready, _, _ = select.select(list(pending), [], [], DEADLINE_S)
            if not ready:
                break
            pending -= set(ready)
        return [fds[fd] for fd in pending]
    finally:
        for fd in fds:
            os.close(fd)


@needs_pidfd
def test_a_killed_test_process_leaves_no_server_and_no_folder(tmp_path: Path) -> None:
    folder = tmp_path / "harness-pg-x"
    (folder / "cluster").mkdir(parents=True)
    test_process = subprocess.Popen([sys.executable, "-c", TEST_PROCESS, str(folder)], cwd=ROOT,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert test_process.stdout is not None
        started = json.loads(test_process.stdout.readline())
        server, dog = started["server"], started["watchdog"]
        members = group_members(server)
        assert len(members) >= 2 and server in members  # sh and its background sleep
    finally:
        test_process.kill()  # SIGKILL: nothing of the test process runs after this
        test_process.communicate(timeout=DEADLINE_S)  # its end, its pipes closed
    assert wait_all_gone([*members, dog]) == []
    assert not folder.exists()


def start_watchdog(grace_s: str = "10") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests._watchdog", grace_s], cwd=ROOT,
                            stdin=subprocess.PIPE, text=True)


def tell(dog: subprocess.Popen[str], *messages: dict[str, object], torn: str = "") -> None:
    assert dog.stdin is not None
    dog.stdin.write("".join(json.dumps(m) + "\n" for m in messages) + torn)
    dog.stdin.close()
    assert dog.wait(DEADLINE_S) == 0


def test_what_was_forgotten_kept_or_reused_is_left_alone(tmp_path: Path) -> None:
    forgotten, reused = subprocess.Popen(SLEEPER), subprocess.Popen(SLEEPER)
    kept = tmp_path / "kept"
    kept.mkdir()
    try:
        tell(start_watchdog(),
             {"watch": forgotten.pid, "start": started_at(forgotten.pid), "signal": 15,
              "group": False},
             {"forget": forgotten.pid},
             # the same pid, another start time: the system gave the watched pid to this one
             {"watch": reused.pid, "start": "1", "signal": 15, "group": False},
             {"folder": str(kept)}, {"keep": str(kept)},
             torn='{"watch": ')  # the test process died writing: the torn line is skipped
        assert forgotten.poll() is None and reused.poll() is None
        assert kept.is_dir()
    finally:
        for process in (forgotten, reused):
            process.kill()
            process.wait(DEADLINE_S)


#: a process that SIGINT ends, also when this one was started with SIGINT ignored (a
#: background job of a shell without job control: `sleep` would inherit SIG_IGN)
POLITE = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
          "print('ready', flush=True); time.sleep(600)")


def test_the_servers_own_signal_first_then_sigkill_after_the_grace() -> None:
    polite = subprocess.Popen([sys.executable, "-c", POLITE], stdout=subprocess.PIPE, text=True)
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ignoring', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ignoring\n"
        assert polite.stdout is not None and polite.stdout.readline() == "ready\n"
        tell(start_watchdog("0.2"),
             {"watch": polite.pid, "start": started_at(polite.pid),
              "signal": int(signal.SIGINT), "group": False},
             {"watch": stubborn.pid, "start": started_at(stubborn.pid), "signal": 15,
              "group": False})
        assert polite.wait(DEADLINE_S) == -signal.SIGINT  # its own signal, as asked
        assert stubborn.wait(DEADLINE_S) == -signal.SIGKILL
    finally:
        for process in (polite, stubborn):
            if process.poll() is None:
                process.kill()
                process.wait(DEADLINE_S)
            if process.stdout:
                process.stdout.close()


LEADER = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                          "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          "print('ignoring', flush=True); time.sleep(600)"],
                         stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(600)
"""


@needs_pidfd
def test_a_group_whose_leader_exits_first_is_killed_whole() -> None:
    """SIGTERM to the group: the leader exits, a member ignores it; SIGKILL after the grace
    still reaches the member through the group."""
    leader = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert leader.stdout is not None
        member = int(leader.stdout.readline())
        tell(start_watchdog("0.5"), {"watch": leader.pid, "start": started_at(leader.pid),
                                     "signal": 15, "group": True})
        assert leader.wait(DEADLINE_S) == -signal.SIGTERM
        assert wait_all_gone([member]) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.communicate(timeout=DEADLINE_S)
