"""Explore fixtures: real SQLite files and PostgreSQL databases, stores opened the way explore
opens them (SQLite busy_timeout 0; mutants without their timed rendezvous), and controllers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.explore.controller import Controller
from harness.explore.target import explore_store
from tests.conftest import BACKENDS

Open = Callable[..., Controller]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'explore.db'}"
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def open_controller(db_url: str) -> Iterator[Open]:
    """``open_controller(mutant=None, commit_steps=False)``: a controller on the reference store
    or a mutant."""
    with ExitStack() as stack:

        def opener(mutant: str | None = None, *, commit_steps: bool = False) -> Controller:
            text = f"mutant:{mutant}@{db_url}" if mutant else db_url
            store, _ = stack.enter_context(explore_store(text))
            return stack.enter_context(Controller(store, commit_steps=commit_steps))

        yield opener


@pytest.fixture
def target_text(db_url: str) -> Callable[[str | None], str]:
    """``target_text(mutant)``: the --target text for the reference store or a mutant."""
    return lambda mutant=None: f"mutant:{mutant}@{db_url}" if mutant else db_url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real redis-server of this test session, on a free loopback port (Debian's package)."""
    import shutil
    import socket
    import subprocess

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--loglevel", "notice"], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:  # its log says when it listens: no polling, no sleep
        if "Ready to accept connections" in line:
            break
    else:
        pytest.fail(f"redis-server on port {port} exited with {server.wait()}")
    import threading

    stdout = server.stdout
    threading.Thread(target=lambda: stdout.read(), daemon=True).start()  # keep its pipe drained
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait()
    server.stdout.close()
