"""A server a test process starts does not outlive it: the *watchdog*.

Killing the xdist controller alone (``kill PID``) ends its workers without their session
teardown: execnet interrupts a worker whose controller went away and ``os._exit``s it seconds
later, and the servers the worker had started (an embedded PostgreSQL, redis-server, a LiteLLM
proxy, Portkey, the example services) kept running, holding ports and folders in /tmp.

So a test process that starts a server starts, on its first :func:`watch`, a watchdog
(``python -m tests._watchdog``) in a session of its own (a Ctrl-C to the run's process group does
not reach it) that reads a pipe from it. The test process writes, a JSON line each, every server
it starts (``watch``: pid, start time, the signal that stops it, whether to its process group)
and stops (:func:`forget`), and every folder to remove with them (:func:`folder`). When the pipe
ends (the test process ended, however it ended) the watchdog stops what is still watched: the
server's signal (SIGINT for PostgreSQL's fast shutdown, else SIGTERM), SIGKILL to what is left
after :data:`GRACE_S`; then removes the folders. A process is known by pid *and* start time: a pid
the system reused meanwhile is left alone. A test process that stopped its servers itself leaves
nothing watched, and its watchdog only exits.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GRACE_S = 10.0  # from the server's own signal to SIGKILL
POLL_S = 0.1  # how often the ending watchdog looks whether the servers went

_lock = threading.Lock()
_dog: dict[int, subprocess.Popen[str]] = {}  # by the pid of the test process that started it
_told: dict[int, list[dict[str, Any]]] = {}  # what each told its watchdog (for a new one)
_lost: list[subprocess.Popen[str]] = []  # a watchdog that died: kept, not garbage-collected


def started_at(pid: int) -> str:
    """``pid``'s start time (clock ticks since boot, /proc/PID/stat field 22); ``""`` where
    there is no /proc; ``"gone"`` when no such process runs (a zombie counts as gone)."""
    if not Path("/proc/self/stat").exists():
        return ""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no such process, or reaped while read (ProcessLookupError)
        return "gone"
    fields = stat[stat.rindex(")") + 2:].split()  # the name in parentheses may hold spaces
    return "gone" if fields[0] == "Z" else fields[19]


def _send(message: dict[str, Any]) -> None:
    """Tell this process's watchdog ``message``, starting it first if need be (a fork of a test
    process starts its own); one that died is replaced and told everything again."""
    me = os.getpid()
    with _lock:
        told = _told.setdefault(me, [])
        told.append(message)
        for _ in range(2):
            dog = _dog.get(me)
            lines = [message]
            if dog is None or dog.poll() is not None:
                if dog is not None:
                    _lost.append(dog)
                dog = _dog[me] = subprocess.Popen(
                    [sys.executable, "-m", "tests._watchdog"], cwd=ROOT, stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                    start_new_session=True)
                lines = told
            assert dog.stdin is not None
            try:
                dog.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
                dog.stdin.flush()
                return
            except OSError:  # it died meanwhile: a new one, told everything
                _lost.append(_dog.pop(me))


def _end_mine() -> None:
    """At this process's normal exit: end its watchdog's pipe and wait for it (it stops what is
    still watched and removes the folders) instead of leaving it running, unwaited for, to the
    interpreter's teardown (a ResourceWarning, an error under the suite's filterwarnings, printed
    at the end of every run). A kill skips this; the pipe then ends with the process."""
    mine = _dog.get(os.getpid())
    for dog in [*_lost, *([mine] if mine is not None else [])]:
        if dog.stdin is not None:
            with contextlib.suppress(OSError):  # it died: its pipe is broken
                dog.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):  # left running: it still ends
            dog.wait(timeout=GRACE_S + 5.0)  # what it watches (a lost one has ended already)


atexit.register(_end_mine)  # in every process that imports this, forks included: each ends its own


def watchdog_pid() -> int | None:
    """This process's watchdog, if it started one."""
    dog = _dog.get(os.getpid())
    return dog.pid if dog is not None else None


def watch(pid: int, *, stop: signal.Signals = signal.SIGTERM, group: bool = False) -> None:
    """Stop ``pid`` (its process group when ``group``) with ``stop`` if this process ends first."""
    _send({"watch": pid, "start": started_at(pid), "signal": int(stop), "group": group})


def forget(pid: int) -> None:
    """``pid`` was stopped (or is about to be): not the watchdog's to stop."""
    _send({"forget": pid})


def stop(process: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """Stop a watched server this process started: SIGTERM, SIGKILL after ``timeout_s``; reaped
    and forgotten."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)
    forget(process.pid)


def folder(path: Path | str, *, keep: bool = False) -> None:
    """Remove ``path`` after the watched servers, if this process ends first (``keep``: not)."""
    _send({"keep" if keep else "folder": str(path)})


def _alive(pid: int, start: str) -> bool:
    if start == "gone":  # already gone when it was watched
        return False
    now = started_at(pid)
    if now == "":  # no /proc: whether the pid runs at all
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return now == start


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end(watched: dict[int, dict[str, Any]], folders: list[str], grace_s: float = GRACE_S) -> None:
    """Stop what is still ``watched`` (its signal, then SIGKILL after ``grace_s``); remove
    ``folders``. A server that leads its process group (LiteLLM, Portkey, PostgreSQL: sessions
    of their own) is waited for, and killed, with its group: members outlive a leader that
    exits first."""
    live = {pid: w for pid, w in watched.items() if _alive(pid, w["start"])}
    groups = {pid for pid in live if _leads_group(pid)}

    def still(pid: int, w: dict[str, Any]) -> bool:
        return _group_alive(pid) if pid in groups else _alive(pid, w["start"])

    for pid, w in live.items():
        _signal(pid, w["signal"], w["group"])
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        time.sleep(POLL_S)  # polling processes that are not its children, not synchronising
        live = {pid: w for pid, w in live.items() if still(pid, w)}
    for pid in live:
        _signal(pid, signal.SIGKILL, pid in groups)
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str]) -> None:
    """Read the test process's lines until its pipe ends, then :func:`end` (``argv``: the
    grace in seconds, if not GRACE_S). A message repeated (told again to a new watchdog) is
    harmless."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watched: dict[int, dict[str, Any]] = {}
    folders: list[str] = []
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:  # the last line, torn by the test process's end
            continue
        if "watch" in message:
            watched[int(message["watch"])] = message
        elif "forget" in message:
            watched.pop(int(message["forget"]), None)
        elif "folder" in message:
            folders.append(message["folder"])
        elif message.get("keep") in folders:
            folders.remove(message["keep"])
    end(watched, folders, float(argv[0]) if argv else GRACE_S)


if __name__ == "__main__":
    main(sys.argv[1:])
