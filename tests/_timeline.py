"""Opt-in test timeline: with ``HARNESS_TEST_TIMELINE=<file>`` every process that runs tests
(each pytest-xdist worker, or a plain run) appends one JSON line per test: its worker, node id,
and the Unix times its setup began and its teardown ended. ``.ci/timing.py`` reads the file to
show when each worker finished and what the last one ran last: a parallel run's critical path.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator

import pytest

ENV = "HARNESS_TEST_TIMELINE"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    path = os.environ.get(ENV)
    start = time.time()
    try:
        return (yield)
    finally:
        if path:
            line = json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                               "test": item.nodeid, "start": round(start, 3),
                               "end": round(time.time(), 3)}) + "\n"
            # one write of a short line with O_APPEND: the workers' lines never interleave
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
