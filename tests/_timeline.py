"""Opt-in test timeline: with ``HARNESS_TEST_TIMELINE=<file>`` every process that runs tests
(each pytest-xdist worker, or a plain run) appends one JSON line per test: its worker, node id,
the Unix times its setup began and its teardown ended, and the CPU seconds (user + system) it
cost from setup to teardown: ``cpu`` of the test process itself (its threads: in-process
servers too), ``children`` of the subprocesses it started and reaped, and ``pg`` of the embedded
PostgreSQL's backends that exited meanwhile (the server detaches, so no rusage sees it), and
``forked`` of the fork server's children (tests/_forkserver.py: services, CLI runs) that it
reaped meanwhile, as ``wait4`` reports them (a service's CPU counts where it ends). At its
end each process adds one ``summary`` line: CPU before its first test (start-up and collection)
and in all. ``.ci/timing.py`` reads the file: when each worker finished and what the last one
ran last (a parallel run's critical path), and where the CPU went.

``HARNESS_TEST_SPAWNS=1`` adds to each test's line the programs it started (``spawns``: a
Python's ``-m module`` or script, else the program's name), read by an audit hook on
``subprocess.Popen``; it is separate because an audit hook sees every event of the process.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from tests import _forkserver
from tests._servers import PG_PIDFILES

ENV = "HARNESS_TEST_TIMELINE"
SPAWNS_ENV = "HARNESS_TEST_SPAWNS"
_spawns: list[str] = []


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process, and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _pg_cpu() -> float:
    """CPU seconds of the embedded PostgreSQL servers' postmasters and their exited backends
    (utime, stime, cutime, cstime of /proc/<pid>/stat); 0 when none runs or /proc is absent."""
    ticks = 0
    for pidfile in PG_PIDFILES:
        try:
            pid = pidfile.read_text().split("\n", 1)[0].strip()
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except (OSError, IndexError):
            continue
        ticks += sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def _spawned(event: str, args: tuple[object, ...]) -> None:
    if event != "subprocess.Popen":
        return
    executable, argv = args[0], args[1]
    words = [str(os.fsdecode(a)) if isinstance(a, str | bytes) else str(a) for a in argv] \
        if isinstance(argv, list | tuple) else [str(argv)]
    program = os.fsdecode(executable) if isinstance(executable, str | bytes) else ""
    name = os.path.basename(program or (words[0] if words else "?"))
    if name.startswith("python") and len(words) > 1:
        rest = words[1:]
        name += f" -m {rest[1]}" if rest[0] == "-m" and len(rest) > 1 else (
            " -c" if rest[0] == "-c" else f" {os.path.basename(rest[0])}")
    _spawns.append(name)


def _write(path: str, entry: dict[str, object]) -> None:
    line = json.dumps(entry) + "\n"
    # one write of a short line with O_APPEND: the workers' lines never interleave
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


_first: list[tuple[float, float]] = []  # the process's CPU when its first test began


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(ENV) and os.environ.get(SPAWNS_ENV) == "1":
        sys.addaudithook(_spawned)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    path = os.environ.get(ENV)
    if not path:
        return (yield)
    start, (own, kids), pg, forked = time.time(), _cpu(), _pg_cpu(), _forkserver.reaped_cpu()
    if not _first:
        _first.append((own, kids))
    del _spawns[:]
    del _teardown[:]
    try:
        return (yield)
    finally:
        # the last test's teardown is the session's too (its servers stop, their CPU is
        # reaped): a line of its own, so that no test is charged with it
        last = _teardown[0] if _teardown else (time.time(), _cpu(), _pg_cpu())
        entry: dict[str, object] = {
            "worker": _worker(), "test": item.nodeid, "start": round(start, 3),
            "end": round(last[0], 3), "cpu": round(last[1][0] - own, 3),
            "children": round(last[1][1] - kids, 3), "pg": round(last[2] - pg, 3),
            "forked": round(_forkserver.reaped_cpu() - forked, 3)}
        if _spawns:
            entry["spawns"] = list(_spawns)
        _write(path, entry)
        if _teardown:
            (own_after, kids_after), pg_after = _cpu(), _pg_cpu()
            _write(path, {"worker": _worker(), "session": True, "test": SESSION_TEARDOWN,
                          "start": round(last[0], 3), "end": round(time.time(), 3),
                          "cpu": round(own_after - last[1][0], 3),
                          "children": round(kids_after - last[1][1], 3),
                          "pg": round(pg_after - last[2], 3)})


#: the last test's teardown, with the session's: (when, (own CPU, children's), PostgreSQL's)
_teardown: list[tuple[float, tuple[float, float], float]] = []
SESSION_TEARDOWN = "(the last test's teardown, with the session's fixtures)"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    if nextitem is None and os.environ.get(ENV):
        _teardown[:] = [(time.time(), _cpu(), _pg_cpu())]
    return (yield)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    own, kids = _cpu()
    before = _first[0] if _first else (own, kids)
    _write(path, {"worker": _worker(), "summary": True, "cpu_before_tests": round(before[0], 3),
                  "cpu": round(own, 3), "children": round(kids, 3),
                  "pg": round(_pg_cpu(), 3)})
