"""A NUL character (U+0000) is the caller's input error on PostgreSQL, never 'the database failed'.

PostgreSQL text and jsonb cannot hold U+0000; the driver's DataError used to surface as
StoreError (a 503 in the service, an infrastructure failure to a scenario engine).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.domain import Intent, InvalidIntent
from harness.store import SqlStore, open_store

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_dsn: str) -> Iterator[SqlStore]:
    store = open_store(pg_dsn, pool_size=2)
    yield store
    store.close()


def test_a_nul_in_the_intent_is_invalid_input(pg_store: SqlStore) -> None:
    with pytest.raises(InvalidIntent, match="NUL"):
        pg_store.create_job("alice", "k1", Intent(contract="c", input={"a": "x\x00y"}))


def test_a_nul_in_a_provider_is_invalid_input(pg_store: SqlStore) -> None:
    job = pg_store.create_job("alice", "k2", Intent(contract="c", input={})).job
    with pytest.raises(InvalidIntent, match="NUL"):
        pg_store.start_attempt("alice", job.id, "open\x00ai")
    assert pg_store.list_attempts("alice", job.id) == []  # nothing was written
