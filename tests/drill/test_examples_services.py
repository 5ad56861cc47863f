"""The example services of examples/drill/ do what their docstrings say, seen WITHOUT the drill
engine: each is started on loopback in front of two recording fakes, one job is submitted per
scripted primary behaviour, and the job's states and the fakes' logs are compared with the
service's documented behaviour (its ground truth). test_examples_drills.py then checks that the
engine finds the same."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.drill.conftest import provider_env

pytestmark = pytest.mark.slow  # a service starts in 1-5 s (the SDKs' imports) on a loaded machine

TIMEOUT_S = 0.5  # every service's provider timeout (its hedge delay, for the hedging ones)
LATE = "slow:900"  # answers after the timeout, before the call is abandoned (3 x timeout)


@dataclass
class Run:
    """One job: the (status, answering provider) pairs observed in order, and the fakes' calls."""

    job: dict[str, Any]
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    primary: list[Any] = field(default_factory=list)
    fallback: list[Any] = field(default_factory=list)
    races: list[Any] = field(default_factory=list)

    @property
    def billed(self) -> int:
        return sum(call.billed for call in self.primary + self.fallback)

    def results(self) -> list[str | None]:
        """The answering providers of every completed observation, changes only."""
        out: list[str | None] = []
        for status, provider in self.seen:
            if status == "succeeded" and (not out or out[-1] != provider):
                out.append(provider)
        return out


def submit(url: str, fakes: dict[str, Any], behaviour: str, *, clicks: int = 1,
           watch_s: float = 2.0) -> Run:
    """Script the primary, submit one job (``clicks`` times, same key), watch it until it is
    finished, every provider call has ended and ``watch_s`` passed (the services abandon a call
    after 3 x 0.5 s)."""
    fakes["primary"].app.set_behaviour(behaviour)
    tag = f"drill-{uuid.uuid4().hex[:12]}"
    began = time.monotonic()
    answers = [httpx.post(f"{url}/v1/jobs", headers={"Idempotency-Key": tag}, timeout=10,
                          json={"input": {"text": f"Summarise ticket {tag}."}})
               for _ in range(clicks)]
    assert [a.status_code for a in answers] == [201] + [200] * (clicks - 1), answers
    assert len({a.json()["id"] for a in answers}) == 1
    run = Run(answers[0].json())
    pause = threading.Event()  # never set: its wait() is the poll interval
    with httpx.Client(timeout=10) as client:
        while True:
            job = client.get(f"{url}/v1/jobs/{run.job['id']}").json()
            state = (job["status"], (job["result"] or {}).get("provider"))
            if not run.seen or run.seen[-1] != state:
                run.seen.append(state)
            settled = all(f.app.wait_settled(0) for f in fakes.values())
            done = job["status"] in ("succeeded", "failed")
            if done and settled and time.monotonic() - began > watch_s:
                break
            assert time.monotonic() - began < 15, f"job still changing: {run.seen}"
            pause.wait(0.02)  # observing a black box: polling is all it offers
        run.races = client.get(f"{url}/v1/jobs/{run.job['id']}/races").json()
    run.primary = [r for r in fakes["primary"].app.received() if r.tag == tag]
    run.fallback = [r for r in fakes["fallback"].app.received() if r.tag == tag]
    return run


def start(start_service: Any, fakes: dict[str, Any], script: str, *args: str) -> str:
    env = provider_env(fakes["primary"].port, fakes["fallback"].port)
    return str(start_service(script, ["--timeout", str(TIMEOUT_S), *args], env).url)


def test_correct_service_keeps_every_promise(start_service: Any, fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "correct_service.py")
    control = submit(url, fakes, "conformant", watch_s=0)
    assert control.results() == ["openai"] and control.billed == 1 and not control.fallback

    hang = submit(url, fakes, "hang", clicks=2)  # a double click during a hang: one job
    assert [c.outcome for c in hang.primary] == ["abandoned"]
    assert [c.outcome for c in hang.fallback] == ["answered"]
    assert hang.fallback[0].at - hang.primary[0].at >= TIMEOUT_S - 0.05  # the hedge delay
    assert ("failed", None) not in hang.seen and hang.results() == ["anthropic"]

    late = submit(url, fakes, LATE)
    assert late.results() == ["anthropic"], late.seen  # the late answer never replaces it
    assert len(late.races) == 1 and late.races[0]["winner_attempt_id"]  # discarded, recorded
    assert late.billed == 2

    for behaviour, primary_outcome in (("status:500", "refused"), ("status:429", "refused"),
                                       ("reset-after-send", "reset"), ("stream-cut", "cut")):
        run = submit(url, fakes, behaviour, watch_s=0)
        assert [c.outcome for c in run.primary] == [primary_outcome], behaviour
        assert run.results() == ["anthropic"] and run.billed <= 2, (behaviour, run.seen)
        assert ("failed", None) not in run.seen, behaviour


def test_sdk_retries_resend_a_timed_out_call(start_service: Any, fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "sdk_retries_service.py")
    hang = submit(url, fakes, "hang", watch_s=0)
    assert [c.outcome for c in hang.primary] == ["abandoned"] * 3  # the SDK's 2 retries
    assert hang.billed == 4 and hang.results() == ["anthropic"]
    assert ("failed", None) not in hang.seen
    assert submit(url, fakes, "conformant", watch_s=0).billed == 1


def test_timeout_marks_failed_and_late_answer_overwrites(start_service: Any,
                                                         fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "timeout_fails_service.py")
    hang = submit(url, fakes, "hang")
    assert ("failed", None) in hang.seen and hang.results() == ["anthropic"]
    late = submit(url, fakes, LATE)
    assert late.results() == ["anthropic", "openai"], late.seen  # overwritten
    assert late.billed == 2


def test_primary_not_aborted_replaces_the_reply(start_service: Any,
                                                fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "no_abort_service.py")
    late = submit(url, fakes, LATE)
    assert late.results() == ["anthropic", "openai"], late.seen
    assert ("failed", None) not in late.seen and late.billed == 2
    hang = submit(url, fakes, "hang")
    assert hang.results() == ["anthropic"] and hang.billed == 2


def test_redis_queue_redelivers_a_running_job(start_service: Any, fakes: dict[str, Any],
                                              redis_url: str) -> None:
    url = start(start_service, fakes, "redis_queue_service.py", "--redis", redis_url)
    assert submit(url, fakes, "conformant", watch_s=0).billed == 1
    hang = submit(url, fakes, "hang")
    assert len(hang.primary) >= 2, hang.primary
    first, second = hang.primary[:2]
    assert second.at < (first.ended_at or 0)  # delivered again while the first still waited
    assert hang.billed >= 3 and hang.results() == ["anthropic"]
    assert len(hang.races) == len(hang.fallback) - 1  # the compare-and-swap still holds


@pytest.mark.parametrize("script", ["correct_service.py", "no_abort_service.py"])
def test_key_reuse_and_bad_requests(start_service: Any, fakes: dict[str, Any],
                                    script: str) -> None:
    url = start(start_service, fakes, script)
    first = httpx.post(f"{url}/v1/jobs", headers={"Idempotency-Key": "k1"},
                       json={"input": {"text": "a"}})
    other = httpx.post(f"{url}/v1/jobs", headers={"Idempotency-Key": "k1"},
                       json={"input": {"text": "b"}})
    assert (first.status_code, other.status_code) == (201, 409)
    same = httpx.post(f"{url}/v1/jobs", headers={"Idempotency-Key": "k2"},
                      json={"input": {"n": 1, "text": "c"}})
    again = httpx.post(f"{url}/v1/jobs", headers={"Idempotency-Key": "k2"},
                       content=b'{"input": {"text": "c", "n": 1.0}}')  # the same intent
    assert (same.status_code, again.status_code) == (201, 200)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert other.json()["code"] == "idempotency_key_reused"
    assert httpx.post(f"{url}/v1/jobs", json={"input": {}}).json()["code"] == \
        "idempotency_key_missing"
    job_id = first.json()["id"]
    assert httpx.get(f"{url}/v1/jobs/{job_id}",
                     headers={"Authorization": "Bearer mallory"}).status_code == 404
