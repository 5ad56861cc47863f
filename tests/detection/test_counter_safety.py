"""The SQL side-effect counter only reads the service's database, and never shows its password."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from harness.scenarios.targets.side_effects import CounterError, open_counter
from harness.target.model import SqlCounter
from tests._servers import tls


def _counter(url: str, query: str):  # type: ignore[no-untyped-def]
    with httpx.Client(verify=tls()) as http:
        return open_counter(None, SqlCounter(url=url, query=query), http=http,
                            base_url="http://127.0.0.1:9")


@pytest.mark.postgres
def test_the_postgresql_counter_opens_a_read_only_session(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("CREATE TABLE charges (id serial PRIMARY KEY)")
    counter = _counter(pg_dsn, "SELECT count(*) FROM charges")
    assert counter.count() == 0
    # A query that writes (by mistake or by malice in a shared profile) is refused by the
    # server, and nothing is written.
    writing = _counter(
        pg_dsn, "WITH made AS (INSERT INTO charges DEFAULT VALUES RETURNING 1) "
                "SELECT count(*) FROM made")
    with pytest.raises(CounterError, match="ReadOnlySqlTransaction"):
        writing.count()
    assert counter.count() == 0


def test_a_key_value_dsn_password_stays_out_of_counter_errors() -> None:
    dsn = "host=127.0.0.1 port=1 user=app password=kv-Counter-pw dbname=shop connect_timeout=2"
    with pytest.raises(CounterError) as info:
        _counter(dsn, "SELECT 1").count()
    assert "kv-Counter-pw" not in str(info.value) and "[REDACTED]" in str(info.value)
