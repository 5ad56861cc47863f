"""The conformant services keep API.md's promises, checked directly over HTTP — not through the
harness — so that when a scenario fails against them, the failure is the harness's.

Concurrency is real: the copies of each request wait on one barrier and go out on their own
connections. Each race is run several rounds.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests._servers import tls
from tests.precision.conftest import TOKENS, Fleet
from tests.precision.services_registry import CONFORMANT

ALICE, BOB = list(TOKENS)
ROUNDS = 5


@pytest.fixture(params=[pytest.param(name, id=name, marks=[pytest.mark.postgres]
                                     if spec.postgres else []) for name, spec in
                        CONFORMANT.items()])
def base(request: pytest.FixtureRequest, fleet: Fleet) -> str:
    return fleet.get(request.param).url


@pytest.fixture
def alice(base: str) -> Iterator[httpx.Client]:
    with fresh(base) as client:
        yield client


def at_once(count: int, send: Callable[[int], httpx.Response]) -> list[httpx.Response]:
    """``send(i)`` on ``count`` threads released together; the answers in copy order."""
    barrier = threading.Barrier(count, timeout=30)  # breaks instead of hanging
    answers: list[Any] = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            answers[i] = send(i)
        except httpx.HTTPError as exc:  # kept: the assertion names it
            answers[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def fresh(base: str, token: str = ALICE) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30,
                        verify=tls())


def create(client: httpx.Client, key: str, **intent: Any) -> httpx.Response:
    body = {"contract": "ticket_triage", "input": {"ticket": key}, **intent}
    return client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})


def test_concurrent_identical_creates_are_one_job(base: str) -> None:
    for _ in range(ROUNDS):
        key = f"dup-{uuid.uuid4().hex}"

        def send(i: int, key: str = key) -> httpx.Response:
            with fresh(base) as client:
                return create(client, key)

        answers = at_once(12, send)
        assert all(isinstance(a, httpx.Response) for a in answers), answers
        assert sorted(a.status_code for a in answers) == [200] * 11 + [201]
        assert len({a.json()["id"] for a in answers}) == 1
        assert all(a.headers.get("Idempotent-Replayed") == "true"
                   for a in answers if a.status_code == 200)


def test_concurrent_starts_open_one_attempt(base: str, alice: httpx.Client) -> None:
    for _ in range(ROUNDS):
        job = create(alice, f"start-{uuid.uuid4().hex}").json()["id"]

        def send(i: int, job: str = job) -> httpx.Response:
            with fresh(base) as client:
                return client.post(f"/v1/jobs/{job}/attempts", json={"provider": f"p{i}"})

        answers = at_once(8, send)
        started = [a for a in answers if a.status_code == 201]
        assert len(started) == 1, [a.status_code for a in answers]
        winner = started[0].json()["id"]
        for refused in (a for a in answers if a.status_code != 201):
            assert refused.status_code == 409
            assert refused.json()["code"] == "attempt_in_flight"
            assert refused.json()["blocking_attempt_id"] == winner


def test_concurrent_claims_have_one_winner_and_record_the_losers(base: str,
                                                                 alice: httpx.Client) -> None:
    for _ in range(ROUNDS):
        job = create(alice, f"claim-{uuid.uuid4().hex}", policy={"max_open_attempts": 2})
        job_id = job.json()["id"]
        attempts = [alice.post(f"/v1/jobs/{job_id}/attempts", json={"provider": p}).json()["id"]
                    for p in ("primary", "fallback")]

        def send(i: int, attempts: list[str] = attempts) -> httpx.Response:
            with fresh(base) as client:
                return client.post(f"/v1/attempts/{attempts[i]}/events",
                                   json={"type": "succeeded", "result": {"from": i}})

        answers = at_once(2, send)
        outcomes = sorted(a.json()["outcome"] for a in answers)
        assert outcomes == ["lost", "won"]
        winner = next(a.json()["id"] for a in answers if a.json()["outcome"] == "won")
        loser = next(a.json()["id"] for a in answers if a.json()["outcome"] == "lost")
        read = alice.get(f"/v1/jobs/{job_id}").json()
        assert (read["status"], read["completed_by"]) == ("succeeded", winner)
        assert read["version"] > job.json()["version"]
        races = alice.get(f"/v1/jobs/{job_id}/races").json()
        assert [(r["attempt_id"], r["winner_attempt_id"]) for r in races] == [(loser, winner)]
        assert races[0]["reason"] and races[0]["payload_sha256"]
        again = alice.post(f"/v1/attempts/{winner}/events",
                           json={"type": "succeeded", "result": {"from": attempts.index(winner)}})
        assert again.status_code == 200 and again.json()["outcome"] == "won"  # idempotent
        assert alice.post(f"/v1/jobs/{job_id}/attempts",
                          json={"provider": "late"}).json()["code"] == "job_completed"


def test_a_timeout_leaves_the_attempt_unknown_and_blocking(alice: httpx.Client) -> None:
    job = create(alice, f"timeout-{uuid.uuid4().hex}").json()["id"]
    first = alice.post(f"/v1/jobs/{job}/attempts", json={"provider": "silent"}).json()
    assert first["read_version"] == alice.get(f"/v1/jobs/{job}").json()["version"]
    alice.post(f"/v1/attempts/{first['id']}/events", json={"type": "dispatched"})
    timed_out = alice.post(f"/v1/attempts/{first['id']}/events", json={"type": "timed_out"})
    assert timed_out.json()["state"] == "unknown"
    assert alice.get(f"/v1/jobs/{job}").json()["status"] == "running"
    blocked = alice.post(f"/v1/jobs/{job}/attempts", json={"provider": "fallback"})
    assert (blocked.status_code, blocked.json()["code"]) == (409, "attempt_in_flight")
    assert blocked.json()["blocking_attempt_id"] == first["id"]
    wrong = alice.post(f"/v1/attempts/{first['id']}/events", json={"type": "dispatched"})
    assert (wrong.status_code, wrong.json()["code"]) == (409, "invalid_transition")
    alice.post(f"/v1/attempts/{first['id']}/events", json={"type": "cancelled", "reason": "op"})
    assert alice.post(f"/v1/jobs/{job}/attempts", json={"provider": "fallback"}).status_code \
        == 201


def test_owners_keys_and_refusals(base: str, alice: httpx.Client) -> None:
    key = f"owner-{uuid.uuid4().hex}"
    alices = create(alice, key).json()["id"]
    with fresh(base, BOB) as bob:
        bobs = create(bob, key)
        assert bobs.status_code == 201 and bobs.json()["id"] != alices
        for path in (f"/v1/jobs/{alices}", f"/v1/jobs/{alices}/attempts",
                     f"/v1/jobs/{alices}/races"):
            answer = bob.get(path)
            assert (answer.status_code, answer.json()["code"]) == (404, "not_found")
        start = bob.post(f"/v1/jobs/{alices}/attempts", json={"provider": "x"})
        assert start.status_code == 404
    with httpx.Client(base_url=base, verify=tls()) as anonymous:
        assert anonymous.post("/v1/jobs", json={}).status_code == 401
        assert anonymous.get(f"/v1/jobs/{alices}",
                             headers={"Authorization": "Bearer nope"}).status_code == 401
    other = alice.post("/v1/jobs", json={"contract": "ticket_triage", "input": {"x": 2}},
                       headers={"Idempotency-Key": key})
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_key_reused")
    assert alice.get(f"/v1/jobs/{alices}").json()["input"] == {"ticket": key}
    missing = alice.post("/v1/jobs", json={"contract": "c", "input": {}})
    assert missing.json()["code"] == "idempotency_key_missing"
    spaced = alice.post("/v1/jobs", json={"contract": "c", "input": {}},
                        headers={"Idempotency-Key": "a b"})
    assert spaced.json()["code"] == "idempotency_key_invalid"
    invalid = alice.post("/v1/jobs", json={"contract": "c", "input": []},
                         headers={"Idempotency-Key": f"bad-{uuid.uuid4().hex}"})
    assert (invalid.status_code, invalid.json()["code"]) == (422, "invalid_request")
    assert invalid.headers["content-type"].startswith("application/problem+json")
    assert "input" in invalid.json()["detail"]
