"""Bodies no store can keep, in every place a body goes: 422 naming the field, never a 5xx
(and never a retryable 503), on both stores and over a real socket."""

from __future__ import annotations

import pytest

from harness.service.client import AsyncHarnessClient
from tests.service.apihelp import new_attempt, new_job, new_key, problem

pytestmark = pytest.mark.anyio

EVENT_BODIES = [
    (b'{"type": "failed", "error": {"code": "x", "message": "m", "n": 1e400}}', "body.error.n"),
    (b'{"type": "failed", "error": {"code": "x", "message": "m", "n": -1e999}}', "body.error.n"),
    (b'{"type": "failed", "error": {"code": "x", "message": "m", "n": NaN}}', "body.error.n"),
    (b'{"type": "failed", "error": {"code": "x", "message": "m\\u0000"}}', "body.error.message"),
    (b'{"type": "failed", "error": {"code": "x", "code": "y", "message": "m"}}', "body.error"),
    (b'{"type": "succeeded", "result": {"v": [1, Infinity]}}', "body.result.v[1]"),
    (b'{"type": "succeeded", "type": "failed", "result": {}}', "'type' twice"),
    (b'{"type": "cancelled", "reason": "r\\u0000"}', "body.reason"),
]


@pytest.mark.parametrize(("content", "field"), EVENT_BODIES,
                         ids=["overflow", "negative-overflow", "nan", "nul", "duplicate-key",
                              "infinity-in-result", "duplicate-type", "nul-reason"])
async def test_a_hostile_event_body_is_422_naming_the_field(
    alice: AsyncHarnessClient, content: bytes, field: str
) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    reply = await alice.request("POST", f"/v1/attempts/{attempt['id']}/events", content=content)
    assert field in problem(reply, 422, "invalid_request")["detail"]
    assert "retry-after" not in reply.headers
    assert (await alice.list_attempts(attempt["job_id"])).body[0]["state"] == "starting"


@pytest.mark.parametrize(("content", "field"), [
    (b'{"provider": "a", "provider": "b"}', "'provider' twice"),
    (b'{"provider": "a", "x": 1e400}', "body.x"),
])
async def test_a_hostile_attempt_body_is_422(
    alice: AsyncHarnessClient, content: bytes, field: str
) -> None:
    job = await new_job(alice)
    reply = await alice.request("POST", f"/v1/jobs/{job['id']}/attempts", content=content)
    assert field in problem(reply, 422, "invalid_request")["detail"]


async def test_a_duplicate_key_in_a_job_changes_nothing(alice: AsyncHarnessClient) -> None:
    key = new_key()
    body = b'{"contract": "c", "contract": "d", "input": {}}'
    reply = await alice.request("POST", "/v1/jobs", content=body,
                                headers={"Idempotency-Key": key})
    assert "'contract' twice" in problem(reply, 422, "invalid_request")["detail"]
    ok = await alice.request("POST", "/v1/jobs", content=b'{"contract": "d", "input": {}}',
                             headers={"Idempotency-Key": key})
    assert ok.status == 201, ok.body


@pytest.mark.postgres
def test_a_value_postgresql_refuses_is_the_requests_fault_not_a_503(pg_dsn: str) -> None:
    """Whatever slips past the body checks: a data exception (SQLSTATE class 22) is 422."""
    from harness.domain import InvalidIntent
    from harness.store import open_store

    store = open_store(pg_dsn)
    try:
        with pytest.raises(InvalidIntent, match="cannot be stored"), \
                store.statements() as tx:
            tx.conn.execute("SELECT 'Infinity'::jsonb")
    finally:
        store.close()


def test_a_value_sqlite_refuses_is_the_requests_fault(tmp_path) -> None:
    import sqlite3

    from harness.domain import InvalidIntent
    from harness.store.sqlite import _wrap

    assert isinstance(_wrap(sqlite3.DataError("string or blob too big")), InvalidIntent)
