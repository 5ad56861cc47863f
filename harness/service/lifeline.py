"""A ``serve`` worker process dies with its parent: no orphan keeps serving the port.

uvicorn's ``--workers`` supervisor starts fresh interpreters. When the supervisor is killed
outright (SIGKILL, the OOM killer) it cannot stop them, and they would keep serving the port,
so that the next ``serve`` finds it in use. Each worker therefore asks the kernel for SIGTERM
when its parent dies (Linux ``PR_SET_PDEATHSIG``: uvicorn's own handler then shuts the worker
down gracefully); elsewhere a daemon thread watches the parent's pid.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading

ENV_PARENT_PID = "HARNESS_SERVE_PARENT_PID"  # set by ``serve`` for the workers it starts
_PR_SET_PDEATHSIG = 1
_WATCH_INTERVAL_S = 0.5


def mark_parent() -> None:
    """In ``serve``, before the workers start: they are to die with this process."""
    os.environ[ENV_PARENT_PID] = str(os.getpid())


def tie_to_parent() -> None:
    """In a worker: SIGTERM to this process when the ``serve`` parent dies (a no-op when this
    process was not started by a ``serve`` supervisor)."""
    expected = os.environ.get(ENV_PARENT_PID)
    if not expected or not expected.isdigit() or int(expected) == os.getpid():
        return
    if not _pdeathsig():
        threading.Thread(target=_watch, args=(os.getppid(),), daemon=True,
                         name="harness-parent-watch").start()
    if os.getppid() != int(expected):  # the parent died before the tie was made
        os.kill(os.getpid(), signal.SIGTERM)


def _pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    stop = threading.Event()
    while not stop.wait(_WATCH_INTERVAL_S):
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return
