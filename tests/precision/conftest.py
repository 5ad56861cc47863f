"""The precision suite's fixtures: independently written services as real processes on loopback,
their target profiles, and a runner that judges one scenario through the public engine.

A service is started once per test session (the first test that needs it), on a port the
operating system picks: it prints ``listening on <url>`` once its socket listens, and is then
polled until it answers — never slept for. Every service and database is removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from harness.scenarios import TrialSet, load_scenario, open_target, run_trials
from harness.scenarios.model import Scenario
from tests import _watchdog
from tests._servers import tls
from tests.conftest import session_server

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PROFILES = HERE / "profiles"
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))
DETECTION = sorted((ROOT / "scenarios" / "detection").glob("*.yaml"))
READY_TIMEOUT_S = 60.0
# Long and distinctive, so a token found in a log or report cannot be a coincidence.
TOKENS = {"tok-alice-precision-Vq8sK2": "alice", "tok-bob-precision-Rm4tW9": "bob"}


@dataclass
class Spec:
    """How to run one service: its module, its arguments (given its folder), how many replicas
    share its storage, its detection profile and the environment that profile reads."""

    module: str
    args: Callable[[Path], list[str]]
    profile: str
    replicas: int = 1
    env: Callable[[Path], dict[str, str]] = lambda folder: {}
    ready_path: str = "/healthz"
    postgres: bool = False
    setup: Callable[[Path], None] | None = None


@dataclass
class Running:
    """A started service: its replicas' URLs, its profile, the environment for the profile."""

    name: str
    urls: list[str]
    profile: Path
    env: dict[str, str]
    logs: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.urls[0]


class Process:
    """One service process; the URL (or comma-separated URLs, one per listening socket) is the
    line it prints once its sockets listen."""

    def __init__(self, module: str, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.log_path = log
        self.log = log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", f"tests.precision.services.{module}", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=ROOT,
            env={**os.environ, **env})
        _watchdog.watch(self.proc.pid)
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=READY_TIMEOUT_S):
                self.stop()
                raise RuntimeError(f"{module} printed no URL; see {log}")
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"{module} said {line!r}; its log: {log.read_text()[-2000:]}")
        self.url = line.removeprefix("listening on ")

    def wait_ready(self, path: str) -> None:
        """Poll until the service answers ``path`` (any status: refusers refuse it too)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(timeout=2.0, verify=tls()) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.url} exited: {self.log_path.read_text()[-2000:]}")
                try:
                    for url in self.url.split(","):
                        client.get(url + path)
                    return
                except httpx.TransportError:
                    # not accepting yet; wake at once if the process dies meanwhile
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.proc.wait(timeout=0.05)
        raise RuntimeError(f"{self.url} was not ready within {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        _watchdog.stop(self.proc)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()


class Fleet:
    """Services started on first use and stopped at the end of the session."""

    def __init__(self, folder: Path, specs: dict[str, Spec], pg_server: Callable[[], str]) -> None:
        self.folder = folder
        self.specs = specs
        self.pg_server = pg_server  # the session's PostgreSQL (tests/conftest.py), on first use
        self.running: dict[str, Running] = {}
        self.processes: list[Process] = []
        self.cleanups: list[Callable[[], None]] = []

    def get(self, name: str) -> Running:
        if name in self.running:
            return self.running[name]
        spec = self.specs[name]
        folder = self.folder / name
        folder.mkdir(exist_ok=True)
        env = spec.env(folder)
        if spec.postgres:
            env.update(self._database(name))
        if spec.setup:
            spec.setup(folder)
        urls, logs = [], []
        for n in range(spec.replicas):
            log = folder / f"replica{n}.log"
            proc = Process(spec.module, spec.args(folder), log, env)
            self.processes.append(proc)
            proc.wait_ready(spec.ready_path)
            urls += proc.url.split(",")  # a process may serve one store on several sockets
            logs.append(log)
        self.running[name] = Running(name, urls, PROFILES / spec.profile, env, logs)
        return self.running[name]

    def _database(self, name: str) -> dict[str, str]:
        """A fresh PostgreSQL database for the service (dropped at the end)."""
        dsn = self.pg_server()
        import psycopg
        from psycopg import sql

        dbname = f"precision_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))

        def drop() -> None:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(dbname)))

        self.cleanups.append(drop)
        base, _, _ = dsn.rpartition("/")
        return {"PRECISION_PG_DSN": f"{base}/{dbname}"}

    def stop(self) -> None:
        for proc in self.processes:
            proc.stop()
        for cleanup in self.cleanups:
            cleanup()


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist, the tests of one fleet service run on one worker (tests/conftest.py's
    ``one_worker`` groups), so that each service starts once per run, not once on every worker
    that met one of its tests: a middleware or Node service costs about 0.8 CPU-s to start, and
    the 9 middleware and 6 Node services were started 40 times in a whole-suite run."""
    from tests.precision.services_registry import SPECS  # (it imports this module's Spec)

    params = getattr(getattr(item, "callspec", None), "params", {})
    name = next((v for v in params.values() if isinstance(v, str) and v in SPECS), None)
    if name is not None and item.get_closest_marker("one_worker") is None:
        item.add_marker(pytest.mark.one_worker(f"fleet-{name}"))


@pytest.fixture(scope="session")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("precision-tokens") / "tokens.yaml"
    path.write_text("".join(f"{t}: {o}\n" for t, o in TOKENS.items()), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory, tokens_file: Path) -> Iterator[Fleet]:
    from tests.precision.services_registry import SPECS

    folder = tmp_path_factory.mktemp("precision-services")
    specs = {name: _with_tokens(spec, tokens_file) for name, spec in SPECS.items()}
    running = Fleet(folder, specs, lambda: session_server("postgres"))
    yield running
    running.stop()


def _with_tokens(spec: Spec, tokens: Path) -> Spec:
    args = spec.args
    return Spec(**{**spec.__dict__, "args": lambda folder: [*args(folder), "--tokens-file",
                                                            str(tokens)]})


@pytest.fixture(scope="session")
def scenarios() -> dict[str, Scenario]:
    """Every shipped scenario and every detection scenario, by file stem."""
    return {p.stem: load_scenario(p) for p in [*SHIPPED, *DETECTION]}


Judge = Callable[..., TrialSet]


@pytest.fixture
def judge(tokens_file: Path) -> Judge:
    """``judge(service, scenario, profile=bool, trials=None)`` → the scenario's trials (at its
    default counts unless ``trials`` says otherwise): through the service's profile (detection),
    else as an API.md target over all replicas."""

    def run(service: Running, scenario: Scenario, *, profile: bool,
            trials: int | None = None) -> TrialSet:
        if profile:
            target = open_target(service.url, tokens_file=tokens_file, profile=service.profile,
                                 env={**os.environ, **service.env})
        else:
            target = open_target(",".join(service.urls), tokens_file=tokens_file)
        with target:
            return run_trials(scenario, target, trials=trials)

    return run


def evidence(ts: TrialSet, limit: int = 2) -> str:
    """Why a trial set did not pass, as the CLI prints it: each broken promise or unknown of the
    first runs that were not passed, with the history lines that show it."""
    from harness.scenarios.render import format_op, render_run

    lines = [f"{ts.scenario.name}: {ts.status}" + (f" ({ts.reason})" if ts.reason else "")]
    failing = [run for run in ts.all_runs if run.status != "held"][:limit]
    for run in failing:
        lines.append(f"-- seed {run.seed}, arrival {run.arrival}:")
        lines += render_run(run)
        refused = [op for op in run.history if op.type in ("fail", "info")][:6]
        lines += ["  refused or unanswered:", *(f"    {format_op(op)}" for op in refused)]
    return "\n".join(lines)
