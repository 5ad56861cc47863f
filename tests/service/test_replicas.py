"""Replicas on one database: two ``serve`` processes, and one with ``--workers 4``, on one SQLite
file and on one PostgreSQL database. Concurrent duplicates over real sockets make one job."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.service.client import AsyncHarnessClient, Reply
from tests.service.apihelp import INTENT, new_key
from tests.service.serving import ALICE_TOKEN, TOKENS, ServeProcess

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

IDENTICAL = 200
DIFFERENT = 50


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture(params=["two-processes", "workers-4"])
def replicas(request: pytest.FixtureRequest, shared_db: str, tmp_path: Path) -> Iterator[list[str]]:
    """The base URLs of the replicas, all ready; started together, stopped at the end."""
    if request.param == "two-processes":
        servers = [
            ServeProcess(db=shared_db, log_path=tmp_path / f"serve-{i}.log", tokens=TOKENS)
            for i in range(2)
        ]
    else:
        servers = [ServeProcess(db=shared_db, log_path=tmp_path / "serve-w4.log", tokens=TOKENS,
                                workers=4)]
    try:
        for server in servers:
            server.wait_ready()
        yield [server.url for server in servers]
    finally:
        for server in servers:
            server.stop()


def jobs_in_db(url: str, key: str) -> int:
    """Rows for ``key``, counted by the database itself."""
    query = "SELECT count(*) FROM jobs WHERE owner_id = 'alice' AND idempotency_key = "
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute(query + "?", (key,)).fetchone()[0])
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(query + "%s", (key,)).fetchone()
        assert row is not None
        return int(row[0])


async def spread(urls: list[str], bodies: list[object], key: str) -> list[Reply]:
    """POST every body at once with one key, round-robin over the replicas."""
    clients = [AsyncHarnessClient(url, ALICE_TOKEN, timeout=60.0) for url in urls]
    try:
        return list(await asyncio.gather(*(
            clients[i % len(clients)].create_job(key, body) for i, body in enumerate(bodies)
        )))
    finally:
        for client in clients:
            await client.aclose()


async def test_concurrent_duplicates_over_replicas_make_one_job(
    replicas: list[str], shared_db: str
) -> None:
    key = new_key()
    replies = await spread(replicas, [INTENT] * IDENTICAL, key)
    statuses = Counter(r.status for r in replies)
    assert statuses == {201: 1, 200: IDENTICAL - 1}, statuses
    assert len({r.body["id"] for r in replies}) == 1
    assert all(r.replayed for r in replies if r.status == 200)
    assert jobs_in_db(shared_db, key) == 1

    key = new_key()
    bodies: list[object] = [{**INTENT, "input": {"n": i}} for i in range(DIFFERENT)]
    replies = await spread(replicas, bodies, key)
    statuses = Counter(r.status for r in replies)
    assert statuses == {201: 1, 409: DIFFERENT - 1}, statuses
    assert {r.code for r in replies if r.status == 409} == {"idempotency_key_reused"}
    (winner,) = [r for r in replies if r.status == 201]
    assert winner.body["input"] == bodies[replies.index(winner)]["input"]  # type: ignore[index]
    assert {r.body["job_id"] for r in replies if r.status == 409} == {winner.body["id"]}
    assert jobs_in_db(shared_db, key) == 1
    for url in replicas:  # every replica serves the one job
        async with AsyncHarnessClient(url, ALICE_TOKEN) as api:
            assert (await api.get_job(winner.body["id"])).body == winner.body
