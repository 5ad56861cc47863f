"""A PostgreSQL store whose sessions keep their prepared statements (``keep_prepared``: explore's).

psycopg forgets a session's prepared statements at every ROLLBACK; these sessions keep them, and
a transaction still rolls back as before: a refused operation changes nothing, and a statement
that fails leaves the session usable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.domain import Intent, InvalidIntent, JobCompleted
from harness.store import SqlStore, open_store

pytestmark = pytest.mark.postgres


@pytest.fixture
def kept(pg_dsn: str) -> Iterator[SqlStore]:
    store = open_store(pg_dsn, pool_size=1, keep_prepared=True)  # one session: the one asked
    yield store
    store.close()


def _prepared(store: SqlStore) -> set[str]:
    """The statements the store's one session has prepared."""
    with store.raw_connection() as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT statement FROM pg_prepared_statements", prepare=False)
        return {row["statement"] for row in rows}


def test_statements_are_prepared_at_first_use_and_kept_across_a_rollback(
    kept: SqlStore,
) -> None:
    job = kept.create_job("alice", "k1", Intent(contract="c", input={})).job
    attempt = kept.start_attempt("alice", job.id, "primary")
    kept.succeed("alice", attempt.id, {"ok": True})
    before = _prepared(kept)
    assert any("INSERT INTO attempts" in s for s in before)  # used once, prepared already
    with pytest.raises(JobCompleted):  # refused inside its transaction: ROLLBACK
        kept.start_attempt("alice", job.id, "fallback")
    assert _prepared(kept) >= before
    assert kept.get_job("alice", job.id).completed_by == attempt.id
    assert [a.id for a in kept.list_attempts("alice", job.id)] == [attempt.id]


def test_a_statement_that_fails_rolls_back_and_the_session_goes_on(kept: SqlStore) -> None:
    job = kept.create_job("alice", "k2", Intent(contract="c", input={})).job
    kept.start_attempt("alice", job.id, "primary")  # insert_attempt prepared
    other = kept.create_job("alice", "k3", Intent(contract="c", input={})).job
    with pytest.raises(InvalidIntent, match="NUL"):  # the prepared insert fails in its step
        kept.start_attempt("alice", other.id, "open\x00ai")
    assert kept.list_attempts("alice", other.id) == []
    assert kept.get_job("alice", other.id).status == "pending"  # not marked running
    attempt = kept.start_attempt("alice", other.id, "fallback")
    assert [a.id for a in kept.list_attempts("alice", other.id)] == [attempt.id]
