"""The edges: 1 MiB bodies, non-JSON, what no store can keep, unknown routes, and a store that
fails (503 with no SQL and no stack trace)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from harness.service.app import create_app
from harness.service.auth import TokenTable
from harness.service.client import AsyncHarnessClient
from harness.service.payload import MAX_BODY_BYTES
from harness.store import SqlStore
from tests.service.apihelp import INTENT, new_attempt, new_job, new_key, problem
from tests.service.serving import ALICE_TOKEN, TOKENS

pytestmark = pytest.mark.anyio


def job_of_size(size: int) -> bytes:
    """A valid job body of exactly ``size`` bytes."""
    empty = json.dumps({"contract": "c", "input": {"pad": ""}}).encode()
    return json.dumps({"contract": "c", "input": {"pad": "x" * (size - len(empty))}}).encode()


async def test_a_body_of_exactly_1_mib_is_accepted(alice: AsyncHarnessClient) -> None:
    body = job_of_size(MAX_BODY_BYTES)
    assert len(body) == MAX_BODY_BYTES
    reply = await alice.request("POST", "/v1/jobs", content=body,
                                headers={"Idempotency-Key": new_key()})
    assert reply.status == 201


async def test_a_body_over_1_mib_is_413(alice: AsyncHarnessClient) -> None:
    reply = await alice.request("POST", "/v1/jobs", content=job_of_size(MAX_BODY_BYTES + 1),
                                headers={"Idempotency-Key": new_key()})
    problem(reply, 413, "payload_too_large")


async def test_a_streamed_body_over_1_mib_is_413_without_a_length(connect: Any) -> None:
    """No Content-Length (chunked): the limit holds while reading."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"contract": "c", "input": {"pad": "'
        for _ in range(80):
            yield b"x" * 16384
        yield b'"}}'

    async with connect(ALICE_TOKEN) as alice:
        request = alice._http.build_request(
            "POST", "/v1/jobs", content=chunks(), headers={"Idempotency-Key": new_key()}
        )
        assert "content-length" not in request.headers
        response = await alice._http.send(request)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


@pytest.mark.parametrize(
    "content",
    [b"", b"   ", b"not json", b'{"contract": "c",', b"\xff\xfe{}"],
    ids=["empty", "blank", "text", "truncated", "not-utf8"],
)
async def test_a_non_json_body_is_400(alice: AsyncHarnessClient, content: bytes) -> None:
    reply = await alice.request("POST", "/v1/jobs", content=content,
                                headers={"Idempotency-Key": new_key()})
    problem(reply, 400, "invalid_json")


async def test_a_non_json_event_or_attempt_body_is_400(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    for path in (f"/v1/jobs/{job['id']}/attempts", f"/v1/attempts/{attempt['id']}/events"):
        problem(await alice.request("POST", path, content=b"<xml/>"), 400, "invalid_json")


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b'{"contract": "c", "input": {"a": "nul\\u0000here"}}', "body.input.a"),
        (b'{"contract": "c", "input": {"k\\u0000": 1}}', "body.input"),
        (b'{"contract": "c\\u0000", "input": {}}', "body.contract"),
        (b'{"contract": "c", "input": {"a": ["\\ud800"]}}', "body.input.a[0]"),
        (b'{"contract": "c", "input": {"a": 1e400}}', "body.input.a"),
        (b'{"contract": "c", "input": {"x": NaN}}', "body.input.x"),
        (b'{"contract": "c", "input": {"x": [-Infinity]}}', "body.input.x[0]"),
        (b'{"contract": "c", "input": {"x": 1, "x": 2}}', "body.input"),
        (b'{"contract": "c", "input": {"a": 9007199254740993}}', "input.a"),
        (b'{"contract": "c", "input": {"a": [1, ' + b"9" * 4301 + b"]}}", "body.input.a[1]"),
        (b'{"contract": "c", "params": {"n": -' + b"1" * 5000 + b'}, "input": {}}',
         "body.params.n"),
        (b'{"contract": "c", "input": ' + b'{"a": ' * 80 + b"1" + b"}" * 80 + b"}", "nested"),
        (b'{"contract": "c", "input": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested"),
    ],
    ids=["nul", "nul-key", "nul-contract", "surrogate", "overflow", "nan", "infinity",
         "duplicate-key", "bigint", "4301-digits",
         "5000-digits", "deep", "deeper"],
)
async def test_what_no_store_can_keep_is_422_naming_the_field(
    alice: AsyncHarnessClient, content: bytes, field: str
) -> None:
    reply = await alice.request("POST", "/v1/jobs", content=content,
                                headers={"Idempotency-Key": new_key()})
    assert field in problem(reply, 422, "invalid_request")["detail"]


@pytest.mark.parametrize(
    ("number", "field"),
    [(b"9" * 4301, "body.result.n"), (b"-" + b"9" * 4400, "body.result.n"),
     (str(2**60).encode(), "result.n")],
    ids=["4301-digits", "negative", "beyond-2^53"],
)
async def test_an_integer_no_json_number_carries_in_a_result_is_422_naming_it(
    alice: AsyncHarnessClient, number: bytes, field: str
) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    body = b'{"type": "succeeded", "result": {"n": ' + number + b"}}"
    reply = await alice.request("POST", f"/v1/attempts/{attempt['id']}/events", content=body)
    assert field in problem(reply, 422, "invalid_request")["detail"]
    assert (await alice.list_attempts(attempt["job_id"])).body[0]["state"] == "starting"


async def test_a_nul_in_a_provider_or_result_is_422_not_a_store_error(
    alice: AsyncHarnessClient,
) -> None:
    job = await new_job(alice)
    reply = await alice.start_attempt(job["id"], "open\x00ai")
    problem(reply, 422, "invalid_request")
    attempt = await new_attempt(alice, job["id"])
    reply = await alice.post_event(attempt["id"], {"type": "succeeded", "result": {"a": "\x00"}})
    problem(reply, 422, "invalid_request")
    assert (await alice.get_job(job["id"])).body["status"] == "running"


async def test_an_unknown_route_or_method_is_a_problem(alice: AsyncHarnessClient) -> None:
    problem(await alice.request("GET", "/v2/jobs"), 404, "not_found")
    problem(await alice.request("DELETE", "/v1/jobs"), 405, "method_not_allowed")


# -- a store that fails ------------------------------------------------------------------------
def _break(store: SqlStore) -> None:
    """Really break the database under the store: the jobs table disappears."""
    statement = "ALTER TABLE jobs RENAME TO jobs_gone"
    if store.backend == "sqlite":
        with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
            conn.execute(statement)
    else:
        with store.raw_connection() as conn:  # type: ignore[attr-defined]
            conn.execute(statement)
            conn.commit()


async def test_a_store_failure_is_503_without_sql_or_trace(
    service_store: SqlStore, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(service_store, TokenTable(TOKENS))
    transport = httpx.ASGITransport(app)  # type: ignore[arg-type]
    async with AsyncHarnessClient("http://harness.test", ALICE_TOKEN, transport=transport) as api:
        job = await new_job(api)
        _break(service_store)
        with caplog.at_level(logging.WARNING, logger="harness.service"):
            replies = [await api.create_job(new_key(), INTENT), await api.get_job(job["id"])]
    for reply in replies:
        body = problem(reply, 503, "store_unavailable")
        assert reply.headers["retry-after"] == "1"
        text = json.dumps({k: v for k, v in body.items() if k != "instance"}).lower()
        for leak in ("jobs_gone", "no such", "does not exist", "select", "insert", "sql",
                     "traceback", "relation", "table", "psycopg", 'file "'):
            assert leak not in text, (leak, body)
    assert "store error" in caplog.text  # the cause stays in the server's log
