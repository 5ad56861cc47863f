"""Bad input: each a specific error from the hierarchy, and nothing written."""

from __future__ import annotations

import math

import pytest

from harness.domain import (
    HarnessError,
    IdempotencyKeyInvalid,
    IdempotencyKeyMissing,
    Intent,
    InvalidIntent,
    NotFound,
    UnsupportedTarget,
)
from harness.store import SqlStore, open_store
from harness.store.queries import migrations
from tests.store.test_rules import raw_rows


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ("", IdempotencyKeyMissing),
        ("has space", IdempotencyKeyInvalid),
        ("x" * 256, IdempotencyKeyInvalid),
        ("caf\u00e9", IdempotencyKeyInvalid),
        ("tab\there", IdempotencyKeyInvalid),
    ],
)
def test_a_malformed_key_is_refused_and_nothing_written(
    store: SqlStore, key: str, error: type[HarnessError]
) -> None:
    with pytest.raises(error) as err:
        store.create_job("alice", key, Intent(contract="c", input={}))
    assert err.value.http_status == 400
    assert raw_rows(store, "jobs") == []


def test_the_longest_and_the_oddest_valid_keys_are_accepted(store: SqlStore) -> None:
    for key in ("x" * 255, "!~", "a"):
        assert store.create_job("alice", key, Intent(contract="c", input={})).created


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_in_an_input_are_refused_naming_the_field(bad: float) -> None:
    with pytest.raises(InvalidIntent, match=r"input\.deep\[1\]"):
        Intent(contract="c", input={"deep": [1, bad]})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([1, 2], "body must be a JSON object"),
        ({"input": {}}, "'contract' is required"),
        ({"contract": "c"}, "'input' is required"),
        ({"contract": "c", "input": [1]}, "input must be a JSON object"),
        ({"contract": "c", "input": {}, "policy": {"max_open_attempts": 3}}, "max_open_attempts"),
        ({"contract": "c", "input": {}, "extra": 1}, "unknown field"),
    ],
)
def test_a_body_that_is_not_an_intent_names_what_is_wrong(body: object, field: str) -> None:
    with pytest.raises(InvalidIntent, match=field):
        Intent.from_json(body)


def test_unknown_ids_are_not_found(store: SqlStore) -> None:
    with pytest.raises(NotFound):
        store.get_job("alice", "job_nope")
    with pytest.raises(NotFound):
        store.dispatch("alice", "att_nope")


@pytest.mark.parametrize(
    "url", ["mysql://localhost/db", "sqlite://relative.db", "sqlite:///:memory:", "jobs.db"]
)
def test_an_unsupported_store_url_names_the_supported_ones(url: str) -> None:
    with pytest.raises(UnsupportedTarget, match="sqlite:///"):
        open_store(url)


def test_migrations_are_applied_once_and_reopening_is_harmless(store_url: str) -> None:
    first = open_store(store_url)
    first.close()
    again = open_store(store_url)
    try:
        latest = max(v for v, _ in migrations(again.backend))
        assert again.schema_version() == latest  # type: ignore[attr-defined]
        with again.transaction(write=False) as tx:
            rows = tx.conn.execute("SELECT count(*) FROM schema_version").fetchone()  # type: ignore[attr-defined]
        count = rows[0] if not isinstance(rows, dict) else next(iter(rows.values()))
        assert count == len(migrations(again.backend))  # each applied once
    finally:
        again.close()


@pytest.mark.parametrize("where", [{"a": "x\x00y"}, {"k\x00": 1}, {"deep": ["\x00"]}])
def test_a_nul_character_is_refused_alike_on_every_backend(where: dict[str, object]) -> None:
    with pytest.raises(InvalidIntent, match="NUL"):
        Intent(contract="c", input=where)
