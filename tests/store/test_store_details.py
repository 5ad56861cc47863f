"""Store details: SQLite reads take no write lock, a rollback never hides its cause, and an intent
reads back in one canonical representation on every backend."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.domain import Intent, StoreError
from harness.store import SqlStore, open_store
from harness.store.queries import migrations
from harness.store.sqlite import SqliteStore


@pytest.fixture
def sqlite_store(tmp_path: Path) -> SqliteStore:
    # A short busy timeout: a read that wrongly waits for the write lock fails fast.
    store = SqliteStore(tmp_path / "harness.db", busy_timeout_ms=200)
    yield store  # type: ignore[misc]
    store.close()


def test_sqlite_reads_do_not_take_the_write_lock(sqlite_store: SqliteStore) -> None:
    job = sqlite_store.create_job("alice", "k1", Intent(contract="c", input={"n": 1})).job
    attempt = sqlite_store.start_attempt("alice", job.id, "openai")
    writer = sqlite3.connect(sqlite_store.path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock, and keeps it
        writer.execute("UPDATE jobs SET updated_at = updated_at")
        assert sqlite_store.get_job("alice", job.id).id == job.id
        assert [a.id for a in sqlite_store.list_attempts("alice", job.id)] == [attempt.id]
        assert sqlite_store.get_attempt("alice", attempt.id).id == attempt.id
        assert sqlite_store.list_races("alice", job.id) == []
        with pytest.raises(StoreError, match="busy"):  # a write does wait, and says so
            sqlite_store.dispatch("alice", attempt.id)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert sqlite_store.dispatch("alice", attempt.id).state.value == "running"


def test_a_sqlite_error_that_ended_the_transaction_is_reported_not_hidden(
    sqlite_store: SqliteStore,
) -> None:
    job = sqlite_store.create_job("alice", "k1", Intent(contract="c", input={"n": 1})).job
    attempt = sqlite_store.start_attempt("alice", job.id, "openai")
    conn = sqlite_store.connection()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from now on
    # SQLITE_FULL rolls the whole transaction back itself; a second ROLLBACK would raise
    # "no transaction is active" and hide the cause.
    with pytest.raises(StoreError, match="full"):
        sqlite_store.succeed("alice", attempt.id, {"blob": "x" * 200_000})
    assert not conn.in_transaction
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert sqlite_store.succeed("alice", attempt.id, {"ok": 1}).outcome is not None


def test_an_intent_reads_back_canonical_and_alike_on_every_backend(store: SqlStore) -> None:
    intent = Intent(contract="c", input={"a": 1.0, "b": [1.5, 1e21, -0.0, 100.0], "z": "é"},
                    params={"temperature": 0.0})
    created = store.create_job("alice", "k1", intent)
    replayed = store.create_job("alice", "k1", intent)
    again = store.get_job("alice", created.job.id)
    expected = '{"a":1,"b":[1.5,1e+21,0,100],"z":"é"}'
    for job in (created.job, replayed.job, again):
        wire = job.to_json()
        assert json.dumps(wire["input"], separators=(",", ":"), ensure_ascii=False) == expected
        assert json.dumps(wire["params"], separators=(",", ":")) == '{"temperature":0}'
        assert job.fingerprint == intent.fingerprint


def test_migrations_bring_both_backends_to_the_same_version(store_url: str) -> None:
    store = open_store(store_url)
    try:
        latest = max(version for version, _ in migrations(store.backend))
        assert store.schema_version() == latest  # type: ignore[attr-defined]
        assert latest == max(version for version, _ in migrations("sqlite")) \
            == max(version for version, _ in migrations("postgres"))
    finally:
        store.close()
