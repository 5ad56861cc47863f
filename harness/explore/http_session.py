"""A service's session as explore's workers use it: "in progress" retries wait for the controller.

A target profile may declare an in-flight answer (IETF: ``409 request_in_progress``) or 423/429
"locked"; the profile session then retries after a backoff. Under explore a real sleep would
let the request drift outside the controller's view, and a real clock would charge the service
for the time the controller kept its other requests waiting. So on a worker's thread the backoff
*parks* the worker — its retry becomes an option the controller chooses when nothing else can
run — and how long the key stayed busy is measured on the virtual clock. On any other thread
(setup, epilogue) the session sleeps and measures as usual.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from harness.explore.hold import Worker, current_worker


class Parking(Protocol):
    """The controller's side: park a worker until its retry is chosen; the virtual time."""

    now: float

    def park(self, worker: Worker, label: str, wait_s: float) -> None: ...


class ControlledSession:
    """``inner`` with its busy retries handed to ``controller``; everything else unchanged."""

    def __init__(self, inner: Any, controller: Parking) -> None:
        self.inner = inner
        self.controller = controller
        if hasattr(inner, "pause"):  # a profile session: retries busy answers
            inner.pause = self._pause
            inner.elapsed = self._elapsed

    def _pause(self, wait_s: float) -> None:
        worker = current_worker()
        if worker is None:
            time.sleep(wait_s)  # setup or epilogue: no controller to ask
            return
        self.controller.park(worker, f"{worker.client}: retry {worker.doing}", wait_s)

    def _elapsed(self) -> float:
        return self.controller.now if current_worker() is not None else time.perf_counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
