"""Service fixtures: the app in-process (ASGI) on SQLite and PostgreSQL, a real serve process."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from harness.service.app import create_app
from harness.service.auth import TokenTable
from harness.service.client import AsyncHarnessClient
from harness.store import SqlStore, open_store
from tests.conftest import TEMPLATE_DB
from tests.service.serving import ALICE_TOKEN, BOB_TOKEN, TOKENS, ServeProcess

ClientFactory = Callable[[str | None], AsyncHarnessClient]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _open(url: str) -> SqlStore:
    return open_store(url, pool_size=20) if url.startswith("postgres") else open_store(url)


@pytest.fixture
def service_store(store_url: str) -> Iterator[SqlStore]:
    """A fresh reference store, once per backend (for tests that build their own app)."""
    store = _open(store_url)
    yield store
    store.close()


@pytest.fixture(scope="session")
def loopback_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One real ``serve`` process on loopback over a SQLite file, shared by the smoke tests."""
    folder = tmp_path_factory.mktemp("loopback")
    server = ServeProcess(
        db=f"sqlite:///{folder / 'harness.db'}", log_path=folder / "serve.log", tokens=TOKENS
    ).wait_ready()
    yield server
    server.stop()


TARGETS = [
    pytest.param("asgi-sqlite", id="asgi-sqlite"),
    pytest.param("asgi-postgres", id="asgi-postgres", marks=pytest.mark.postgres),
    pytest.param("loopback-sqlite", id="loopback-sqlite"),
]


def _fresh_pg_database(template_dsn: str) -> tuple[str, Callable[[], None]]:
    """A new database from the migrated template (as ``pg_dsn`` does), and its dropper."""
    import psycopg

    name = f"harness_svc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(template_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")

    def drop() -> None:
        with psycopg.connect(template_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return urlunsplit(urlsplit(template_dsn)._replace(path=f"/{name}")), drop


@pytest.fixture(scope="session")
def shared_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """In-process apps shared by the API tests (each test uses its own keys): built lazily."""
    apps: dict[str, object] = {}
    cleanups: list[Callable[[], None]] = []
    apps["_folder"] = tmp_path_factory.mktemp("asgi")
    apps["_cleanups"] = cleanups
    yield apps
    for cleanup in reversed(cleanups):
        cleanup()


def _shared_app(request: pytest.FixtureRequest, backend: str) -> object:
    apps: dict[str, Any] = request.getfixturevalue("shared_apps")
    if backend not in apps:
        if backend == "postgres":
            dsn, drop = _fresh_pg_database(request.getfixturevalue("pg_template"))
            apps["_cleanups"].append(drop)
        else:
            dsn = f"sqlite:///{apps['_folder'] / 'harness.db'}"
        store = _open(dsn)
        apps["_cleanups"].append(store.close)
        apps[backend] = create_app(store, TokenTable(TOKENS))
    return apps[backend]


@pytest.fixture(params=TARGETS)
def connect(request: pytest.FixtureRequest) -> ClientFactory:
    """A factory of API clients for a token: in-process (per store backend) or over loopback."""
    if request.param.startswith("asgi"):
        app = _shared_app(request, request.param.removeprefix("asgi-"))

        def factory(token: str | None) -> AsyncHarnessClient:
            return AsyncHarnessClient(
                "http://harness.test", token, transport=httpx.ASGITransport(app)  # type: ignore[arg-type]
            )
    else:
        server: ServeProcess = request.getfixturevalue("loopback_server")

        def factory(token: str | None) -> AsyncHarnessClient:
            return AsyncHarnessClient(server.url, token)

    return factory


@pytest.fixture
async def alice(connect: ClientFactory) -> AsyncIterator[AsyncHarnessClient]:
    async with connect(ALICE_TOKEN) as client:
        yield client


@pytest.fixture
async def bob(connect: ClientFactory) -> AsyncIterator[AsyncHarnessClient]:
    async with connect(BOB_TOKEN) as client:
        yield client


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text("".join(f"{t}: {o}\n" for t, o in TOKENS.items()), encoding="utf-8")
    return path
