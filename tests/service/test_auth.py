"""Authentication and owner isolation: 401 without a known token, 404 for another owner's
resources, and the token never in a response or a log line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness.service.client import AsyncHarnessClient, HarnessClient, Reply
from tests.service.apihelp import INTENT, new_attempt, new_job, new_key, problem
from tests.service.serving import ALICE_TOKEN, BOB_TOKEN, ServeProcess

pytestmark = pytest.mark.anyio

ROUTES = [
    ("POST", "/v1/jobs", INTENT),
    ("GET", "/v1/jobs/job_x", None),
    ("POST", "/v1/jobs/job_x/attempts", {"provider": "openai"}),
    ("GET", "/v1/jobs/job_x/attempts", None),
    ("POST", "/v1/attempts/att_x/events", {"type": "dispatched"}),
    ("GET", "/v1/jobs/job_x/races", None),
]
UNKNOWN_TOKEN = "tok-mallory-Vb8nQ2kE5rTy7Ui3"


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {UNKNOWN_TOKEN}", f"Basic {ALICE_TOKEN}", "Bearer", f"Bearer  {ALICE_TOKEN}x"],
    ids=["none", "unknown", "basic", "empty", "altered"],
)
async def test_no_or_unknown_token_is_401(
    connect: Any, method: str, path: str, body: Any, authorization: str | None
) -> None:
    headers = {"Idempotency-Key": new_key()}
    if authorization is not None:
        headers["Authorization"] = authorization
    async with connect(None) as anonymous:
        reply = await anonymous.request(method, path, json_body=body, headers=headers)
    problem(reply, 401, "unauthenticated")
    assert reply.headers["www-authenticate"] == "Bearer"
    assert ALICE_TOKEN not in str(reply.body) and UNKNOWN_TOKEN not in str(reply.body)


def _without_ids(reply: Reply, *ids: str) -> tuple[int, str]:
    text = str(reply.body)
    for value in ids:
        text = text.replace(value, "<id>")
    return reply.status, text


async def test_another_owners_resources_are_404_exactly_like_missing_ones(
    alice: AsyncHarnessClient, bob: AsyncHarnessClient
) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    missing_job, missing_attempt = "job_0123456789abcdef0123456789abcdef", "att_0123456789abcd"
    pairs = [
        (bob.get_job(job["id"]), alice.get_job(missing_job)),
        (bob.list_attempts(job["id"]), alice.list_attempts(missing_job)),
        (bob.list_races(job["id"]), alice.list_races(missing_job)),
        (bob.start_attempt(job["id"], "openai"), alice.start_attempt(missing_job, "openai")),
        (bob.post_event(attempt["id"], {"type": "cancelled", "reason": "x"}),
         alice.post_event(missing_attempt, {"type": "cancelled", "reason": "x"})),
    ]
    for theirs, missing in pairs:
        foreign, absent = await theirs, await missing
        problem(foreign, 404, "not_found")
        ids = (job["id"], attempt["id"], missing_job, missing_attempt)
        assert _without_ids(foreign, *ids) == _without_ids(absent, *ids)
    # Nothing bob tried changed alice's job or attempt.
    assert (await alice.list_attempts(job["id"])).body == [attempt]
    assert (await alice.get_job(job["id"])).body["version"] == job["version"]


async def test_no_response_carries_a_token(alice: AsyncHarnessClient, connect: Any) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    replies = [
        await alice.create_job(job["idempotency_key"], INTENT),
        await alice.create_job(job["idempotency_key"], {**INTENT, "input": {}}),
        await alice.post_event(attempt["id"], {"type": "succeeded", "result": {"x": 1}}),
        await alice.list_races(job["id"]),
        await alice.request("GET", "/openapi.json"),
        await alice.request("GET", "/nowhere"),
    ]
    async with connect(UNKNOWN_TOKEN) as mallory:
        replies.append(await mallory.get_job(job["id"]))
    for reply in replies:
        text = str(reply.body) + str(dict(reply.headers))
        for token in (ALICE_TOKEN, BOB_TOKEN, UNKNOWN_TOKEN):
            assert token not in text


def test_tokens_never_reach_the_log(tmp_path: Path, tokens_file: Path) -> None:
    """A real serve process at debug level, tokens from a file: search everything it wrote."""
    server = ServeProcess(
        db=f"sqlite:///{tmp_path / 'harness.db'}", log_path=tmp_path / "serve.log",
        tokens_file=tokens_file, extra=["--log-level", "debug"],
    )
    try:
        server.wait_ready()
        with HarnessClient(server.url, ALICE_TOKEN) as alice, \
                HarnessClient(server.url, BOB_TOKEN) as bob, \
                HarnessClient(server.url, UNKNOWN_TOKEN) as mallory:
            created = alice.create_job(new_key(), INTENT)
            assert created.status == 201
            assert bob.get_job(created.body["id"]).status == 404
            assert mallory.get_job(created.body["id"]).status == 401
            assert mallory.create_job(new_key(), INTENT).status == 401
            raw = alice.request(
                "POST", "/v1/jobs", content=b"{not json",
                headers={"Idempotency-Key": new_key(), "Authorization": f"Bearer {BOB_TOKEN}"},
            )
            assert raw.status == 400
    finally:
        # A graceful stop is exit 0: the SIGTERM uvicorn raises again once it has shut down
        # unwinds serve (tests/cli/test_serving_signals.py), whatever the machine's load.
        assert server.stop() == 0
    log = server.log_text()
    assert "Application shutdown complete" in log
    assert re.search(r"401 for GET /v1/jobs/job_\w+: an unknown token", log), log
    assert '"POST /v1/jobs HTTP/1.1" 201' in log  # the access log was on
    for token in (ALICE_TOKEN, BOB_TOKEN, UNKNOWN_TOKEN):
        assert token not in log
        assert token[-8:] not in log  # not even a fragment
