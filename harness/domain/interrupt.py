"""What an interrupt (Ctrl-C, SIGTERM) must undo at once, before the run unwinds.

A layer that can block on something outside the process (a socket to the target) registers how
to unblock it (:func:`on_interrupt`); the CLI's signal handler calls :func:`interrupt_all`, so a
worker thread waiting on a hostile service returns now instead of at its deadline. Pure: no I/O
of its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

_lock = threading.RLock()  # re-entrant: interrupt_all runs inside a signal handler
_callbacks: list[Callable[[], None]] = []
_resumes: list[Callable[[], None]] = []


def on_interrupt(callback: Callable[[], None],
                 resume: Callable[[], None] | None = None) -> None:
    """Call ``callback`` (quick, never raising) when the run is interrupted, and ``resume``
    when the process goes on after that (a command run in process, by a test)."""
    with _lock:
        if callback not in _callbacks:
            _callbacks.append(callback)
        if resume is not None and resume not in _resumes:
            _resumes.append(resume)


def interrupt_all() -> None:
    """Run every registered callback (a failing one does not stop the others)."""
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        with contextlib.suppress(Exception):
            callback()


def resume_all() -> None:
    """After an interrupted run, when the process goes on: undo what :func:`interrupt_all`
    refused (new connections)."""
    with _lock:
        resumes = list(_resumes)
    for resume in resumes:
        resume()
