"""Every row of API.md, through the client: in-process (SQLite, PostgreSQL) and on a real socket."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
import rfc8785

from harness.service.client import AsyncHarnessClient
from tests.service.apihelp import (
    INTENT,
    JOB_FIELDS,
    RACE_FIELDS,
    event,
    is_rfc3339_utc,
    new_attempt,
    new_job,
    new_key,
    problem,
)

pytestmark = pytest.mark.anyio

# -- jobs ------------------------------------------------------------------------------------
async def test_a_new_job_is_201_with_every_field(alice: AsyncHarnessClient) -> None:
    key = new_key()
    reply = await alice.create_job(key, INTENT)
    assert reply.status == 201
    assert reply.headers["content-type"] == "application/json"
    assert not reply.replayed
    job = reply.body
    assert set(job) == JOB_FIELDS
    assert job["idempotency_key"] == key
    assert (job["contract"], job["input"]) == (INTENT["contract"], INTENT["input"])
    assert job["params"] == {} and job["policy"] == {"max_open_attempts": 1}
    assert job["status"] == "pending" and job["completed_by"] is None and job["result"] is None
    assert is_rfc3339_utc(job["created_at"]) and is_rfc3339_utc(job["updated_at"])
    assert reply.headers["location"] == f"/v1/jobs/{job['id']}"


async def test_the_fingerprint_is_sha256_of_the_rfc8785_intent_with_defaults(
    alice: AsyncHarnessClient,
) -> None:
    job = await new_job(alice)
    canonical = rfc8785.dumps({**INTENT, "params": {}, "policy": {"max_open_attempts": 1}})
    assert job["fingerprint"] == hashlib.sha256(canonical).hexdigest()


async def test_a_replay_is_200_with_the_same_job_and_the_header(alice: AsyncHarnessClient) -> None:
    key = new_key()
    first = await alice.create_job(key, INTENT)
    again = await alice.create_job(key, INTENT)
    assert (first.status, again.status) == (201, 200)
    assert again.headers["idempotent-replayed"] == "true" and again.replayed
    assert again.body == first.body


async def test_the_same_intent_written_differently_is_a_replay(alice: AsyncHarnessClient) -> None:
    key = new_key()
    texts = [
        b'{"contract": "c", "input": {"a": 1, "b": [1, 2]}, "params": {"t": 0.5}}',
        b'{"params":{"t":0.50},"input":{"b":[1.0,2],"a":1.0},"contract":"c"}',
        b'{\n  "input": {"b": [1, 2.0], "a": 1},\n\t"contract": "c",\n  "params": {"t": 5e-1},'
        b' "policy": {"max_open_attempts": 1}}',
    ]
    replies = [
        await alice.request("POST", "/v1/jobs", content=t, headers={"Idempotency-Key": key})
        for t in texts
    ]
    assert [r.status for r in replies] == [201, 200, 200]
    assert len({r.body["id"] for r in replies}) == 1


async def test_same_key_other_intent_is_409_and_changes_nothing(alice: AsyncHarnessClient) -> None:
    key = new_key()
    job = (await alice.create_job(key, INTENT)).body
    body = problem(await alice.create_job(key, {**INTENT, "input": {"other": True}}), 409,
                   "idempotency_key_reused")
    assert "Idempotency-Key" in body["detail"]
    assert (await alice.get_job(job["id"])).body == job
    assert (await alice.create_job(key, INTENT)).status == 200


async def test_concurrent_identical_creates_get_one_job_and_never_409(
    alice: AsyncHarnessClient,
) -> None:
    key = new_key()
    replies = await asyncio.gather(*(alice.create_job(key, INTENT) for _ in range(24)))
    assert sorted(r.status for r in replies) == [200] * 23 + [201]
    assert len({r.body["id"] for r in replies}) == 1
    assert all(r.replayed for r in replies if r.status == 200)


async def test_keys_belong_to_their_owner(
    alice: AsyncHarnessClient, bob: AsyncHarnessClient
) -> None:
    key = new_key()
    mine, theirs = await alice.create_job(key, INTENT), await bob.create_job(key, INTENT)
    assert (mine.status, theirs.status) == (201, 201)
    assert mine.body["id"] != theirs.body["id"]


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "idempotency_key_missing"),
        ({"Idempotency-Key": ""}, "idempotency_key_missing"),
        ({"Idempotency-Key": "has space"}, "idempotency_key_invalid"),
        ({"Idempotency-Key": "k" * 256}, "idempotency_key_invalid"),
        ({"Idempotency-Key": "tab\there"}, "idempotency_key_invalid"),
    ],
)
async def test_a_missing_or_malformed_key_is_400(
    alice: AsyncHarnessClient, headers: dict[str, str], code: str
) -> None:
    reply = await alice.request("POST", "/v1/jobs", json_body=INTENT, headers=headers)
    problem(reply, 400, code)


async def test_a_255_character_key_is_accepted(alice: AsyncHarnessClient) -> None:
    assert (await alice.create_job("~" * 255, INTENT)).status in (200, 201)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": {}}, "contract"),
        ({"contract": "", "input": {}}, "contract"),
        ({"contract": 7, "input": {}}, "contract"),
        ({"contract": "c"}, "input"),
        ({"contract": "c", "input": [1]}, "input"),
        ({"contract": "c", "input": {}, "params": "x"}, "params"),
        ({"contract": "c", "input": {}, "policy": {"max_open_attempts": 3}}, "max_open_attempts"),
        ({"contract": "c", "input": {}, "policy": {"hedge": True}}, "policy"),
        ({"contract": "c", "input": {}, "extra": 1}, "extra"),
        ([1, 2], "object"),
    ],
)
async def test_an_invalid_body_is_422_naming_the_field(
    alice: AsyncHarnessClient, body: Any, field: str
) -> None:
    reply = await alice.create_job(new_key(), body)
    assert field in problem(reply, 422, "invalid_request")["detail"]


async def test_get_job_is_200_or_404(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    assert (await alice.get_job(job["id"])).body == job
    problem(await alice.get_job("job_does_not_exist"), 404, "not_found")
    problem(await alice.get_job("%00\x00é"), 404, "not_found")


# -- attempts --------------------------------------------------------------------------------
async def test_an_attempt_starts_with_the_jobs_version(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    assert attempt["state"] == "starting"
    assert attempt["job_id"] == job["id"] and attempt["provider"] == "openai"
    assert attempt["read_version"] == job["version"]
    assert (await alice.get_job(job["id"])).body["status"] == "running"


async def test_an_open_attempt_blocks_the_next_naming_it(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    first = await new_attempt(alice, job["id"])
    body = problem(await alice.start_attempt(job["id"], "anthropic"), 409, "attempt_in_flight")
    assert body["blocking_attempt_id"] == first["id"]


async def test_a_hedge_policy_allows_two_open_attempts(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice, policy={"max_open_attempts": 2})
    first = await new_attempt(alice, job["id"])
    await new_attempt(alice, job["id"], "anthropic")
    body = problem(await alice.start_attempt(job["id"], "mistral"), 409, "attempt_in_flight")
    assert body["blocking_attempt_id"] == first["id"]


async def test_a_succeeded_job_refuses_attempts(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    assert (await event(alice, attempt["id"], "succeeded", result={"label": "bug"})).ok
    problem(await alice.start_attempt(job["id"], "openai"), 409, "job_completed")


async def test_attempts_on_an_unknown_job_are_404(alice: AsyncHarnessClient) -> None:
    problem(await alice.start_attempt("job_nope", "openai"), 404, "not_found")
    problem(await alice.list_attempts("job_nope"), 404, "not_found")
    problem(await alice.list_races("job_nope"), 404, "not_found")
    problem(await event(alice, "att_nope", "dispatched"), 404, "not_found")


async def test_attempts_are_listed_oldest_first(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    ids = []
    for provider in ("openai", "anthropic", "mistral"):
        attempt = await new_attempt(alice, job["id"], provider)
        ids.append(attempt["id"])
        assert (await event(alice, attempt["id"], "failed", error={"code": "x", "message": "y"})).ok
    listed = await alice.list_attempts(job["id"])
    assert listed.status == 200
    assert [a["id"] for a in listed.body] == ids
    assert [a["state"] for a in listed.body] == ["failed"] * 3


# -- events ----------------------------------------------------------------------------------
async def test_dispatched_then_timed_out_holds_the_gate(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    running = await event(alice, attempt["id"], "dispatched")
    assert (running.status, running.body["state"]) == (200, "running")
    unknown = await event(alice, attempt["id"], "timed_out")
    assert unknown.body["state"] == "unknown"
    assert (await alice.get_job(job["id"])).body["status"] == "running"
    body = problem(await alice.start_attempt(job["id"], "anthropic"), 409, "attempt_in_flight")
    assert body["blocking_attempt_id"] == attempt["id"]


@pytest.mark.parametrize("before", [[], ["dispatched"], ["dispatched", "timed_out"]])
async def test_failed_from_every_open_state_frees_the_slot(
    alice: AsyncHarnessClient, before: list[str]
) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    for kind in before:
        assert (await event(alice, attempt["id"], kind)).ok
    error = {"code": "rate_limited", "message": "429 from the provider"}
    failed = await event(alice, attempt["id"], "failed", error=error)
    assert (failed.status, failed.body["state"], failed.body["error"]) == (200, "failed", error)
    await new_attempt(alice, job["id"], "anthropic")


async def test_timed_out_from_starting_is_unknown(alice: AsyncHarnessClient) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    assert (await event(alice, attempt["id"], "timed_out")).body["state"] == "unknown"


@pytest.mark.parametrize("before", [[], ["dispatched"], ["dispatched", "timed_out"]])
async def test_succeeded_wins_the_claim(alice: AsyncHarnessClient, before: list[str]) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    for kind in before:
        assert (await event(alice, attempt["id"], kind)).ok
    reply = await event(alice, attempt["id"], "succeeded", result={"label": "bug"})
    assert reply.status == 200
    assert (reply.body["state"], reply.body["outcome"]) == ("succeeded", "won")
    done = (await alice.get_job(job["id"])).body
    assert done["status"] == "succeeded" and done["completed_by"] == attempt["id"]
    assert done["result"] == {"label": "bug"} and done["version"] == job["version"] + 1


async def test_a_hedge_that_finishes_second_loses_and_is_a_race(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice, policy={"max_open_attempts": 2})
    first = await new_attempt(alice, job["id"])
    second = await new_attempt(alice, job["id"], "anthropic")
    won = await event(alice, second["id"], "succeeded", result={"label": "feature"})
    lost = await event(alice, first["id"], "succeeded", result={"label": "bug"})
    assert (won.body["outcome"], lost.body["outcome"]) == ("won", "lost")
    assert lost.body["state"] == "succeeded"
    done = (await alice.get_job(job["id"])).body
    assert done["result"] == {"label": "feature"} and done["completed_by"] == second["id"]
    races = await alice.list_races(job["id"])
    assert races.status == 200 and len(races.body) == 1
    race = races.body[0]
    assert set(race) == RACE_FIELDS
    assert race["attempt_id"] == first["id"] and race["winner_attempt_id"] == second["id"]
    assert race["payload_sha256"] == hashlib.sha256(rfc8785.dumps({"label": "bug"})).hexdigest()
    assert is_rfc3339_utc(race["at"]) and race["reason"]


async def test_a_result_after_cancel_is_lost_and_the_attempt_stays_cancelled(
    alice: AsyncHarnessClient,
) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    await event(alice, attempt["id"], "dispatched")
    cancelled = await event(alice, attempt["id"], "cancelled", reason="operator")
    assert (cancelled.body["state"], cancelled.body["cancel_reason"]) == ("cancelled", "operator")
    late = await event(alice, attempt["id"], "succeeded", result={"label": "bug"})
    assert late.status == 200
    assert (late.body["state"], late.body["outcome"]) == ("cancelled", "lost")
    assert (await alice.get_job(job["id"])).body["completed_by"] is None
    races = (await alice.list_races(job["id"])).body
    assert [r["attempt_id"] for r in races] == [attempt["id"]]


@pytest.mark.parametrize("before", [[], ["dispatched"], ["dispatched", "timed_out"]])
async def test_cancelled_from_every_open_state(
    alice: AsyncHarnessClient, before: list[str]
) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    for kind in before:
        assert (await event(alice, attempt["id"], kind)).ok
    assert (await event(alice, attempt["id"], "cancelled", reason="r")).body["state"] == "cancelled"


@pytest.mark.parametrize(
    ("path", "kind", "from_state", "to_state"),
    [
        (["dispatched"], "dispatched", "running", "running"),
        (["timed_out"], "dispatched", "unknown", "running"),
        (["timed_out"], "timed_out", "unknown", "unknown"),
        (["failed"], "succeeded", "failed", "succeeded"),
        (["failed"], "cancelled", "failed", "cancelled"),
        (["succeeded"], "failed", "succeeded", "failed"),
        (["cancelled"], "dispatched", "cancelled", "running"),
    ],
)
async def test_a_forbidden_event_is_409_naming_both_states(
    alice: AsyncHarnessClient, path: list[str], kind: str, from_state: str, to_state: str
) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    fields = {
        "failed": {"error": {"code": "x", "message": "y"}},
        "succeeded": {"result": {"ok": 1}},
        "cancelled": {"reason": "r"},
    }
    for step in path:
        assert (await event(alice, attempt["id"], step, **fields.get(step, {}))).ok
    body = problem(await event(alice, attempt["id"], kind, **fields.get(kind, {})), 409,
                   "invalid_transition")
    assert (body["from_state"], body["to_state"]) == (from_state, to_state)
    assert from_state in body["detail"] and to_state in body["detail"]


async def test_a_repeated_succeeded_is_idempotent(alice: AsyncHarnessClient) -> None:
    job = await new_job(alice)
    attempt = await new_attempt(alice, job["id"])
    first = await event(alice, attempt["id"], "succeeded", result={"a": 1, "b": 2})
    again = await alice.request(
        "POST", f"/v1/attempts/{attempt['id']}/events",
        content=b'{"result": {"b": 2.0, "a": 1}, "type": "succeeded"}',
    )
    assert (again.status, again.body) == (200, first.body)
    after = (await alice.get_job(job["id"])).body
    assert after["version"] == job["version"] + 1
    assert (await alice.list_races(job["id"])).body == []
    other = await event(alice, attempt["id"], "succeeded", result={"a": 2})
    problem(other, 409, "invalid_transition")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "exploded"}, "type"),
        ({}, "type"),
        ({"type": None}, "type"),
        ({"type": ["dispatched"]}, "type"),
        ({"type": {"a": 1}}, "type"),
        ({"type": "failed"}, "error"),
        ({"type": "failed", "error": "boom"}, "error"),
        ({"type": "failed", "error": {"code": "x", "message": 5}}, "error.message"),
        ({"type": "succeeded"}, "result"),
        ({"type": "succeeded", "result": [1]}, "result"),
        ({"type": "cancelled", "reason": 3}, "reason"),
        ({"type": "dispatched", "result": {}}, "result"),
        ("dispatched", "object"),
    ],
)
async def test_an_invalid_event_is_422_naming_the_field(
    alice: AsyncHarnessClient, body: Any, field: str
) -> None:
    attempt = await new_attempt(alice, (await new_job(alice))["id"])
    reply = await alice.request("POST", f"/v1/attempts/{attempt['id']}/events", json_body=body)
    assert field in problem(reply, 422, "invalid_request")["detail"]
    assert (await alice.list_attempts(attempt["job_id"])).body[0]["state"] == "starting"


@pytest.mark.parametrize("body", [{}, {"provider": ""}, {"provider": 1}, {"provider": "x", "y": 1}])
async def test_an_invalid_attempt_body_is_422(alice: AsyncHarnessClient, body: Any) -> None:
    job = await new_job(alice)
    reply = await alice.request("POST", f"/v1/jobs/{job['id']}/attempts", json_body=body)
    problem(reply, 422, "invalid_request")


# -- operations ------------------------------------------------------------------------------
async def test_healthz_names_the_store(alice: AsyncHarnessClient, connect: Any) -> None:
    async with connect(None) as anonymous:
        reply = await anonymous.healthz()
    assert reply.status == 200
    assert reply.body["status"] == "ok" and reply.body["store"] in ("sqlite", "postgres")


async def test_openapi_describes_every_route_and_error(connect: Any) -> None:
    async with connect(None) as anonymous:
        reply = await anonymous.request("GET", "/openapi.json")
    assert reply.status == 200
    paths = reply.body["paths"]
    expected = {
        ("/v1/jobs", "post"): {"200", "201", "400", "401", "409", "413", "422", "503"},
        ("/v1/jobs/{job_id}", "get"): {"200", "401", "404", "503"},
        ("/v1/jobs/{job_id}/attempts", "post"): {"201", "400", "401", "404", "409", "413",
                                                 "422", "503"},
        ("/v1/jobs/{job_id}/attempts", "get"): {"200", "401", "404", "503"},
        ("/v1/attempts/{attempt_id}/events", "post"): {"200", "400", "401", "404", "409",
                                                       "413", "422", "503"},
        ("/v1/jobs/{job_id}/races", "get"): {"200", "401", "404", "503"},
        ("/healthz", "get"): {"200"},
    }
    for (path, method), statuses in expected.items():
        assert set(paths[path][method]["responses"]) == statuses, (path, method)
    schemas = reply.body["components"]["schemas"]
    assert {"Job", "Attempt", "Race", "Problem", "JobRequest", "SucceededEvent"} <= set(schemas)
    header = paths["/v1/jobs"]["post"]["responses"]["200"]["headers"]
    assert "Idempotent-Replayed" in header
