"""Detection fixtures: the example services of examples/ on real loopback sockets (in a thread,
or as a subprocess), their profiles, and the detection scenarios.

Readiness is polled (``GET /healthz``), never slept for."""

from __future__ import annotations

import importlib
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import uvicorn

from harness.providers.fake_server import bind_socket
from harness.scenarios.loader import load_scenario
from harness.scenarios.model import Scenario
from harness.scenarios.targets import Target, open_target
from tests import _watchdog
from tests._servers import tls

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DETECTION = ROOT / "scenarios" / "detection"
PROFILE = EXAMPLES / "jobs.profile.yaml"
SQL_PROFILE = EXAMPLES / "jobs-sql.profile.yaml"
READY_TIMEOUT_S = 30.0


def example(name: str) -> ModuleType:
    """An example module (examples/ is not a package: its files import each other by name)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def wait_ready(url: str, alive: Callable[[], bool] = lambda: True) -> None:
    """Poll ``GET /healthz`` until it answers 200 (the server is up), within a deadline."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0, verify=tls()) as client:
        while time.monotonic() < deadline:
            if not alive():
                raise RuntimeError(f"the service at {url} exited before it was ready")
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not accepting yet: ask again
    raise RuntimeError(f"the service at {url} was not ready within {READY_TIMEOUT_S} s")


class ThreadService:
    """An example service (``correct`` or ``gap``) under uvicorn in a thread, on a socket bound
    to a free loopback port; ``args`` are its command-line options."""

    def __init__(self, kind: str, db: Path, args: list[str]) -> None:
        self.db = db
        module = example(f"{kind}_service")
        parser = example("jobs_app").build_parser(kind, module.options)
        self.args = parser.parse_args(["--db", str(db), *args])
        app = module.build(self.args)
        self.sock = bind_socket("127.0.0.1", 0)  # IPPROTO_TCP: asyncio then sets TCP_NODELAY
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)
        self.thread.start()
        wait_ready(self.url, self.thread.is_alive)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


class ProcessService:
    """An example service as its own process (``python examples/<kind>_service.py --port 0``);
    the URL is the line it prints once its socket listens."""

    def __init__(self, kind: str, db: Path, args: list[str], log: Path) -> None:
        self.db = db
        self.log = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / f"{kind}_service.py"), "--port", "0",
             "--db", str(db), *args],
            stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=db.parent)
        _watchdog.watch(self.process.pid)
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=READY_TIMEOUT_S):
                self.stop()
                raise RuntimeError(f"{kind}_service printed no URL; see {log}")
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"{kind}_service said {line!r}; see {log}")
        self.url = line.removeprefix("listening on ")
        wait_ready(self.url, lambda: self.process.poll() is None)

    def stop(self) -> None:
        _watchdog.stop(self.process)
        if self.process.stdout:
            self.process.stdout.close()
        self.log.close()


Start = Callable[..., Any]


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[Start]:
    """``start_service(kind, *args, process=False)`` → a running example service (stopped after
    the test); each gets its own SQLite file. Tests whose verdict depends on the service's own
    timing use ``process=True``: in a thread, the service shares the GIL with the engine's
    client threads, and without uvloop its latencies stretch (seen: 127 ms for 85 ms of work)."""
    running: list[ThreadService | ProcessService] = []

    def start(kind: str, *args: str, process: bool = False) -> ThreadService | ProcessService:
        db = tmp_path / f"{kind}-{len(running)}.db"
        service: ThreadService | ProcessService = (
            ProcessService(kind, db, list(args), tmp_path / f"{kind}-{len(running)}.log")
            if process else ThreadService(kind, db, list(args)))
        running.append(service)
        return service

    yield start
    for service in running:
        service.stop()


@pytest.fixture
def profiled(tmp_path: Path) -> Iterator[Callable[..., Target]]:
    """``profiled(url, profile=PROFILE, **changes)`` → a profile target (closed after the test);
    ``changes`` replace top-level profile fields, written to a copy of the profile."""
    opened: list[Target] = []

    def open_(url: str, profile: Path = PROFILE, env: dict[str, str] | None = None,
              **changes: Any) -> Target:
        path = profile
        if changes:
            import yaml

            data = yaml.safe_load(profile.read_text(encoding="utf-8"))
            data.update(changes)
            path = tmp_path / f"profile-{len(opened)}.yaml"
            path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        target = open_target(url, profile=path, env={**os.environ, **(env or {})})
        opened.append(target)
        return target

    yield open_
    for target in opened:
        target.close()


@pytest.fixture(scope="session")
def detection() -> dict[str, Scenario]:
    """The scenarios of scenarios/detection/, by name."""
    return {p.stem: load_scenario(p) for p in sorted(DETECTION.glob("*.yaml"))}
