"""Signals for the commands that serve (``serve``, ``fake-provider``): uvicorn stops them.

While uvicorn serves, Ctrl-C and SIGTERM are its own: it stops accepting, lets open requests
finish (up to its graceful-shutdown timeout), then puts back the handlers it found and raises
the signal once more. Those handlers are these: the signal unwinds as ``KeyboardInterrupt``
(which the command, or ``uvicorn.run``, takes as the end of a clean stop: exit 0). Without them
the re-raised signal reached the CLI's own handler, whose hard exit — meant for a run stuck in
its work — fired one second later, and a clean stop that took longer on a loaded machine ended
with 130 or 143 instead of 0.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _unwind(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def stopped_by_uvicorn() -> Iterator[None]:
    """While uvicorn serves (in the main thread): a stop signal unwinds, and nothing else."""
    previous = {each: signal.signal(each, _unwind) for each in STOP_SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
