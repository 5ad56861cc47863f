"""Arrival patterns: when each copy of a concurrent group of duplicate requests is sent.

=============  ==================================================================================
``burst``      every copy released at once by a barrier (the default; what ``concurrent: N``
               always did)
``staggered``  copy 1 at 0; the others at seeded offsets spread over a window (``window_ms``, or
               three times the first request's measured latency)
``straddle``   copy 1 at 0; the others timed to land while the first is being completed: across
               the last third of its measured latency (the window where a middleware that
               stores its result after releasing its lock runs the handler again)
=============  ==================================================================================

A plan is a pure function of (pattern, number of copies, seed, step, latency): the seed draws
the *fractions*, the measured latency scales them, so the same seed reproduces the schedule of
arrivals (the real latency is recorded next to it). The waits that space the copies are the
behaviour under test — real wall-clock spacing of requests, in milliseconds — not a way to wait
for a result: every copy is joined before its answer is read.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.scenarios.model import ARRIVAL_PATTERNS

T = TypeVar("T")
BARRIER_TIMEOUT_S = 60.0
CALIBRATION_SAMPLES = 3
STAGGER_LATENCIES = 3.0  # a staggered window without window_ms: this many first-request latencies
STRADDLE_FROM = 2 / 3  # straddle copies land in [2/3, 1] of the first request's latency


@dataclass(frozen=True, slots=True)
class ArrivalPlan:
    """When each copy of one group is sent, relative to the first (milliseconds)."""

    pattern: str
    fractions: tuple[float, ...]
    offsets_ms: tuple[float, ...]
    latency_ms: float | None = None
    window_ms: float | None = None

    @property
    def offsets_s(self) -> tuple[float, ...]:
        return tuple(ms / 1000 for ms in self.offsets_ms)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"pattern": self.pattern,
                                "fractions": [round(f, 6) for f in self.fractions],
                                "offsets_ms": [round(ms, 3) for ms in self.offsets_ms]}
        if self.latency_ms is not None:
            data["latency_ms"] = round(self.latency_ms, 3)
        if self.window_ms is not None:
            data["window_ms"] = round(self.window_ms, 3)
        return data


def needs_latency(pattern: str, window_ms: float | None = None) -> bool:
    """Whether the plan is scaled by the first request's latency (measured before the group)."""
    return pattern == "straddle" or (pattern == "staggered" and window_ms is None)


def fractions(pattern: str, n: int, *, seed: int, step: int) -> tuple[float, ...]:
    """The seeded shape of the plan: copy 1 at 0, the others' draws in [0, 1), per copy."""
    if pattern not in ARRIVAL_PATTERNS:
        raise ValueError(f"unknown arrival pattern {pattern!r}; use one of "
                         f"{', '.join(ARRIVAL_PATTERNS)}")
    if pattern == "burst" or n < 2:
        return (0.0,) * n
    draws = random.Random(f"arrival/{pattern}/{seed}/{step}")
    return (0.0, *(draws.random() for _ in range(n - 1)))


def plan(pattern: str, n: int, *, seed: int, step: int, latency_ms: float | None = None,
         window_ms: float | None = None) -> ArrivalPlan:
    """The arrival plan of a group of ``n`` copies (see the module docstring)."""
    shape = fractions(pattern, n, seed=seed, step=step)
    if pattern == "burst":
        return ArrivalPlan(pattern, shape, shape)
    if needs_latency(pattern, window_ms) and latency_ms is None:
        raise ValueError(f"a {pattern} plan needs the first request's latency")
    if pattern == "staggered":
        window = window_ms if window_ms is not None else STAGGER_LATENCIES * (latency_ms or 0.0)
        return ArrivalPlan(pattern, shape, tuple(f * window for f in shape), latency_ms, window)
    assert latency_ms is not None
    offsets = (0.0, *(latency_ms * (STRADDLE_FROM + (1 - STRADDLE_FROM) * f)
                      for f in shape[1:]))
    return ArrivalPlan(pattern, shape, offsets, latency_ms)


def median_latency_ms(samples_s: Sequence[float]) -> float:
    """The latency a plan is scaled to: the median of the calibration samples."""
    return statistics.median(samples_s) * 1000


def timed(call: Callable[[], T]) -> tuple[T, float]:
    """``call()`` and how long it took (seconds)."""
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def send_spaced(call: Callable[[], T], offsets_s: Sequence[float]) -> tuple[list[T], list[float]]:
    """Run ``call`` once per offset, each on its own thread: all threads meet at a barrier, then
    copy *i* waits until ``offsets_s[i]`` after the release and sends. Returns the results in copy
    order and when each copy was really sent (seconds after the release)."""
    results, sent, _ = send_copies(lambda _: call(), offsets_s)
    return results, sent


def send_copies(call: Callable[[int], T],
                offsets_s: Sequence[float]) -> tuple[list[T], list[float], list[float]]:
    """:func:`send_spaced` where copy *i* runs ``call(i)`` (a mixed group: its own body); also
    returns when each copy's call returned (seconds after the release)."""
    n = len(offsets_s)
    release = [0.0]

    def released() -> None:
        release[0] = time.perf_counter()

    barrier = threading.Barrier(n, action=released)
    results: list[Any] = [None] * n
    sent = [0.0] * n
    answered = [0.0] * n
    errors: list[BaseException] = []

    def copy(i: int) -> None:
        try:
            barrier.wait(timeout=BARRIER_TIMEOUT_S)
            due = release[0] + offsets_s[i]
            while (left := due - time.perf_counter()) > 0:
                time.sleep(left)  # spacing arrivals is the behaviour under test
            sent[i] = time.perf_counter() - release[0]
            results[i] = call(i)
            answered[i] = time.perf_counter() - release[0]
        except BaseException as exc:  # re-raised on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=copy, args=(i,), name=f"group-{i}") for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results, sent, answered


def in_flight_together(sent_ms: Sequence[float], answered_ms: Sequence[float]) -> bool:
    """Whether every copy of a group was sent before the first answer came back: the copies
    were in flight together (the race the group asks for could happen)."""
    return bool(sent_ms) and max(sent_ms) <= min(answered_ms)
