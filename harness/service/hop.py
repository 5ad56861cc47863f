"""Store calls off the event loop: a few worker threads fed through one queue.

``await threads.call(fn, *args)`` runs ``fn`` on a worker and resumes the coroutine with its
result (or exception) through ``loop.call_soon_threadsafe``. It does what
``loop.run_in_executor`` does, for a fifth of the CPU: no ``concurrent.futures.Future`` (a
Condition and its locks) per call, which the service's request path measured
(``bench/service.py``: "hop to a store thread and back").
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")
_STOP = object()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if not future.cancelled():  # the caller went away: the call still ran to its end
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


class StoreThreads:
    """``size`` daemon threads that run store calls for coroutines."""

    def __init__(self, size: int, name: str = "harness-store") -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(size)]
        for thread in self._threads:
            thread.start()

    @property
    def size(self) -> int:
        return len(self._threads)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((fn, args, future, loop))
        return await future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fn, args, future, loop = item
            try:
                value, ok = fn(*args), True
            except BaseException as exc:  # delivered to the awaiting coroutine
                value, ok = exc, False
            with suppress(RuntimeError):  # the loop closed meanwhile: nobody waits for it
                loop.call_soon_threadsafe(_settle, future, ok, value)

    def shutdown(self) -> None:
        """Let the threads end once the calls already queued have run."""
        for _ in self._threads:
            self._queue.put(_STOP)
