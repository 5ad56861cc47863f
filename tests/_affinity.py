"""One core per pytest-xdist worker: a worker and the servers it starts share it.

Under ``-n`` each worker (``gwN``) keeps to one of the cores the run may use (``N`` modulo
their number), before it starts anything: every thread of the worker, and what it starts later
inherits it (its embedded PostgreSQL, whose backends are forked from the postmaster, its Redis,
the gateways, the command-line runs it spawns). The services of the fork servers are forked by
the run's zygote (tests/_zygote.py), which is not a worker, and keep every core: a drill's
service, its fakes and the drill's own process may still spread a burst over both.

Why: the heaviest tests are made of round trips between threads and processes (explore's
schedules: each storage step a hand-off from the controller's thread to a client's thread and a
round trip to PostgreSQL). Measured on the 2-core machine (2026-12-07): a round trip between two
processes over a socket cost 7 µs of CPU on each side when both ran on one core and 17 µs when
the kernel put them on two (a wake-up on the other core is an interrupt to it, and on this
virtual machine an exit to the hypervisor); a hand-off between two threads by a condition 23 µs
against 40. One explore test alone (2,000 schedules on PostgreSQL) took 18.7 CPU-s pinned and
27.1 not; the whole suite 569-571 CPU-s pinned and 682 not, in alternating runs
(docs/testing.md).

Off by default, ``HARNESS_TEST_PIN=1`` turns it on: in clean-clone runs with it on, drill tests
of example services whose threads stalled for seconds under load failed in three runs of eight
(the Redis redelivery twin in all three; its Redis, a subprocess of the worker, shares the
worker's core), against three of thirteen before it, two of those on causes fixed since
(docs/testing-history.md, "Twenty-sixth round"). Nothing happens without
``os.sched_setaffinity`` (not Linux), with one core, or in a process that is not an xdist
worker.

What stays on without it: :func:`one_core`, a block during which a test's process keeps to one
core, for the explore searches only (tests/explore/test_search.py), whose costs are hand-offs
between the threads of one process: their eight 2,000-schedule tests took 37-39 CPU-s in it and
49-52 without, two runs each beside two busy loops (alike on an idle machine: 36-37 and 37-39);
in ``pytest -n 6 tests/explore`` (the suite's load), four alternating pairs: 61-77 CPU-s (mean
66) against 66-78 (mean 74), lower in three pairs of four.
The explore runs through a service (test_through.py) gained nothing measurable (38-48 and
39-50): their hand-offs cross into the service's process and Redis, so they are left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator

ENV = "HARNESS_TEST_PIN"
_before: list[int] = []  # the cores this process could use before it was pinned


def run_cores() -> list[int]:
    """The cores this run may use: this process's before it was pinned, else its own now."""
    if _before:
        return list(_before)
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pin_worker(worker_id: str) -> int | None:
    """Keep this process (all its threads) to one core, chosen by the xdist worker id
    (``gw3``: the fourth of the usable cores, counting round); the core, or None when nothing
    was pinned (not turned on, not a worker's id, one core, or no affinity on this system)."""
    if os.environ.get(ENV, "0") != "1" or not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    number = _worker_number(worker_id)
    if number is None or len(cores) < 2:
        return None
    core = cores[number % len(cores)]
    _before[:] = cores
    for tid in _threads():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(tid, {core})
    return core


def _worker_number(worker_id: str) -> int | None:
    """``gw3`` -> 3; None for anything else (the controller, a run without xdist)."""
    number = re.fullmatch(r"gw(\d+)", worker_id)
    return int(number.group(1)) if number else None


def _threads() -> list[int]:
    """This process's threads; without /proc, this thread only (and those it starts later)."""
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


@contextlib.contextmanager
def one_core() -> Iterator[int | None]:
    """For a block, whether or not ``HARNESS_TEST_PIN`` is on: this process's threads, and the
    threads and processes it starts meanwhile, keep to one core (an xdist worker's by its
    number, as :func:`pin_worker` chooses; else the first); after it, the threads get back the
    cores they had (the ones started meanwhile: every core this process had). For the explore
    searches, hand-offs between the controller's thread and the clients' threads and nothing
    else: on one core each costs about half the CPU (the module's docstring). A process it
    starts keeps the core: start servers before the block. Yields the core, or None when
    nothing was pinned (already pinned, one core, or no affinity on this system)."""
    if _before or not hasattr(os, "sched_setaffinity"):
        yield None
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        yield None
        return
    core = cores[(_worker_number(os.environ.get("PYTEST_XDIST_WORKER", "")) or 0) % len(cores)]
    saved: dict[int, set[int]] = {}
    for tid in _threads():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {core})
    try:
        yield core
    finally:
        for tid in _threads():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, saved.get(tid, set(cores)))
