"""Shared fixtures: real SQLite files and real PostgreSQL databases (one per test, templated)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from harness.store import SqlStore, open_store

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

PG_ENV = "HARNESS_PG_DSN"
REQUIRE_PG = os.environ.get("HARNESS_REQUIRE_PG") == "1"
TEMPLATE_DB = f"harness_test_template_{os.getpid()}"  # per session: runs never share it


def _replace_db(dsn: str, dbname: str) -> str:
    """The same server URL with another database name."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def _admin(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A migrated template database, built once per session; its DSN."""
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        if REQUIRE_PG:
            pytest.fail(f"HARNESS_REQUIRE_PG=1 but {PG_ENV} is not set")
        pytest.skip(f"PostgreSQL tests need {PG_ENV}=postgresql://… (see .ci/start-postgres)")
    try:
        admin = _admin(dsn)
    except Exception as exc:
        if REQUIRE_PG:
            pytest.fail(f"HARNESS_REQUIRE_PG=1 but PostgreSQL at {PG_ENV} is unreachable: {exc}")
        pytest.skip(f"PostgreSQL at {PG_ENV} is unreachable: {exc}")
    with admin:
        admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    template_dsn = _replace_db(dsn, TEMPLATE_DB)
    open_store(template_dsn, pool_size=1).close()
    yield dsn
    with _admin(dsn) as admin:
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
