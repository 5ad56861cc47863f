"""The example services of examples/drill/ do what their docstrings say, seen WITHOUT the drill
engine: each is started on loopback in front of recording fakes, jobs are submitted through its
own API (``POST /jobs`` with ``{"text": …}``, ``Idempotency-Key``, ``X-Owner``), and the job's
states and the fakes' logs are compared with the service's documented behaviour (its ground
truth). For every twin the defect is shown to happen, and the correct service is shown not to
do it under the same conditions. test_examples_drills.py then checks what the engine finds."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench import drill_recall
from harness.providers.fake_server import FakeServer
from harness.providers.received import SIGNATURE
from harness.providers.recording import RecordingFake
from tests._servers import tls
from tests.drill.conftest import EXAMPLES, provider_env

pytestmark = pytest.mark.slow  # a service starts in 1-5 s (the SDKs' imports) on a loaded machine

TIMEOUT_S = 0.5  # every service's provider timeout (its hedge delay, for the hedging ones)
GENERATING_S = 5.0  # a provider still generating while the SDK retries (0.5 s + backoff each)
OWNER = {"X-Owner": "alice"}
QUEUE_TIMEOUT_S = 2.0  # the redelivering queue twin's provider timeout (its test says why)
VISIBILITY_S = 1.0  # the redelivery twin's lease: longer than a provider timeout, so a re-run
FOLLOWUP_S = 1.5  # never overlaps the first run's calls; its follow-up outlasts the lease


@pytest.fixture
def fakes() -> Iterator[dict[str, FakeServer]]:
    """Signed recording fakes (each answer names its call): ``primary`` on the OpenAI wire,
    ``fallback`` on the Anthropic wire."""
    servers = {"primary": FakeServer(RecordingFake("openai-chat", name="primary", signed=True)),
               "fallback": FakeServer(RecordingFake("anthropic-messages", name="fallback",
                                                    signed=True))}
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


@dataclass
class Run:
    """One job: the (status, answering call) pairs observed in order, and the fakes' calls."""

    job: dict[str, Any]
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    primary: list[Any] = field(default_factory=list)
    fallback: list[Any] = field(default_factory=list)
    races: list[Any] = field(default_factory=list)
    posted: float = 0.0  # when the job was posted, on the fallback fake's clock

    @property
    def billed(self) -> int:
        return sum(call.billed for call in self.primary + self.fallback)

    def results(self) -> list[str | None]:
        """The answering calls (``primary#3``) of every completed observation, changes only."""
        out: list[str | None] = []
        for status, call in self.seen:
            if status == "succeeded" and (not out or out[-1] != call):
                out.append(call)
        return out

    def providers(self) -> list[str | None]:
        return [None if c is None else c.split("#")[0] for c in self.results()]


def answered_by(job: dict[str, Any]) -> str | None:
    """The call whose answer the job holds (``primary#2``), from the signed text."""
    found = SIGNATURE.search((job["result"] or {}).get("text") or "")
    return f"{found.group(1)}#{found.group(2)}" if found else None


def post(url: str, key: str, text: str, owner: str = "alice") -> httpx.Response:
    return httpx.post(f"{url}/jobs", headers={"Idempotency-Key": key, "X-Owner": owner},
                      json={"text": text}, timeout=10, verify=tls())


def submit(url: str, fakes: dict[str, Any], behaviour: str, *, clicks: int = 1,
           watch_s: float = 2.0, primary_calls: int = 1, results: int = 1,
           redeliveries: bool = False) -> Run:
    """Script the primary, submit one job (``clicks`` times, same key), watch it until it is
    finished, the primary got ``primary_calls`` calls, ``results`` different results were
    seen, every call has ended and ``watch_s`` passed (the services abandon a call after
    3 x 0.5 s); with ``redeliveries`` (a queue whose every delivery of the open job asks the
    primary, then on its timeout the fallback), also until each primary call has been followed
    by its fallback call and the service has recorded one race per fallback answer beyond the
    first (after a primary call ended the fakes see nothing until that delivery's fallback call,
    and a loser is recorded after its call ended: within the watch's 15 s, or the test fails
    there)."""
    fakes["primary"].app.set_behaviour(behaviour)
    tag = f"drill-{uuid.uuid4().hex[:12]}"
    began, posted = time.monotonic(), fakes["fallback"].app.now()
    answers = [post(url, tag, f"Summarise ticket {tag}.") for _ in range(clicks)]
    assert [a.status_code for a in answers] == [201] + [200] * (clicks - 1), answers
    assert len({a.json()["id"] for a in answers}) == 1
    run = Run(answers[0].json(), posted=posted)

    def done() -> bool:
        called = sum(r.tag == tag for r in fakes["primary"].app.received())
        answers = sum(r.tag == tag for r in fakes["fallback"].app.received())
        return run.seen[-1][0] in ("succeeded", "failed") and called >= primary_calls \
            and len(run.results()) >= results \
            and all(f.app.wait_settled(0) for f in fakes.values()) \
            and time.monotonic() - began > watch_s \
            and (not redeliveries
                 or (answers == called and len(run.races) == max(0, answers - 1)))

    with httpx.Client(timeout=10, headers=OWNER, verify=tls()) as client:
        watch(client, url, run, done, races=redeliveries)
        run.races = client.get(f"{url}/jobs/{run.job['id']}/races").json()
    run.primary = [r for r in fakes["primary"].app.received() if r.tag == tag]
    run.fallback = [r for r in fakes["fallback"].app.received() if r.tag == tag]
    return run


def start(start_service: Any, fakes: dict[str, Any], script: str, *args: str,
          fallback_port: int | None = None, timeout_s: float = TIMEOUT_S) -> str:
    env = provider_env(fakes["primary"].port, fallback_port or fakes["fallback"].port)
    return str(start_service(script, ["--timeout", str(timeout_s), *args], env).url)


def test_correct_service_keeps_every_promise(start_service: Any, fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "correct_service.py")
    control = submit(url, fakes, "conformant", watch_s=0)
    assert len(control.primary) == 1, control.primary
    if control.fallback:
        # the primary's answer reached the service after its 0.5 s timeout (a loaded machine):
        # then the hedge is what a correct service does, and it must be a correct hedge
        assert control.fallback[0].at - control.posted >= TIMEOUT_S, control.fallback
        assert len(control.fallback) == 1 and len(control.results()) == 1, control.seen
        # a race is recorded only if the primary's answer reached the service before it gave up
        # on the call, which the fakes cannot see (the held ``late`` run below proves it)
        assert len(control.races) <= 1, control.races
    else:
        assert control.providers() == ["primary"] and control.billed == 1, control.seen

    hang = submit(url, fakes, "hang", clicks=2)  # a double click during a hang: one job
    assert [c.outcome for c in hang.primary] == ["abandoned"]
    assert [c.outcome for c in hang.fallback] == ["answered"]
    # the hedge delay: the service's timer starts once it has the job, so no fallback call can
    # arrive sooner after the post (the fakes' arrival times of the two calls are both late by
    # as much as the machine's load delays them, so their difference proves nothing)
    assert hang.fallback[0].at - hang.posted >= TIMEOUT_S
    assert ("failed", None) not in hang.seen and hang.providers() == ["fallback"]

    # the late answer, held until the fallback's result was seen (a service of the same code
    # that waits 30 s on its primary, so that the answer still reaches it however loaded)
    patient = start(start_service, fakes, "correct_service.py", "--abandon-after", "30")
    late = held_run(patient, fakes, "conformant", failed=False, after=lambda run: bool(run.races))
    assert late.providers() == ["fallback"], late.seen  # the late answer never replaces it
    assert len(late.races) == 1 and late.races[0]["winner_attempt_id"]  # discarded, recorded
    assert [c.outcome for c in late.primary] == ["answered"]  # it reached the service
    assert late.billed == 2 and len(late.primary) == 1  # no call beyond the one hedge

    for behaviour, primary_outcome in (("status:500", "refused"), ("status:429", "refused"),
                                       ("reset-after-send", "reset"), ("stream-cut", "cut")):
        run = submit(url, fakes, behaviour, watch_s=0)
        assert [c.outcome for c in run.primary] == [primary_outcome], behaviour
        assert run.providers() == ["fallback"] and run.billed <= 2, (behaviour, run.seen)
        assert ("failed", None) not in run.seen, behaviour


def test_sdk_retries_start_while_the_timed_out_call_is_unresolved(
        start_service: Any, fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "sdk_retries_service.py")
    slow = submit(url, fakes, f"slow:{int(GENERATING_S * 1000)}", watch_s=0, primary_calls=3)
    assert [c.outcome for c in slow.primary] == ["late"] * 3  # the SDK's 2 retries
    first = slow.primary[0]
    for retry in slow.primary[1:]:
        # each retry starts while the provider is still generating the first call's answer
        # (ready at first.at + GENERATING_S): a new attempt while its outcome is unknown
        assert first.at + TIMEOUT_S - 0.05 <= retry.at < first.at + GENERATING_S, slow.primary
    assert slow.billed == 4 and slow.providers() == ["fallback"]
    assert ("failed", None) not in slow.seen
    hang = submit(url, fakes, "hang", watch_s=0, primary_calls=3)
    assert [c.outcome for c in hang.primary] == ["abandoned"] * 3 and hang.billed == 4
    assert submit(url, fakes, "conformant", watch_s=0).billed == 1


def held_run(url: str, fakes: dict[str, Any], primary: str, *, failed: bool = True,
             after: Callable[[Run], bool] = lambda run: True) -> Run:
    """One job whose order the held answers decide, not the machine's load: the primary's calls
    behave as ``primary`` (``hang``, or an answer held); with ``failed``, the fallback's answer
    is held until the job was seen ``failed``; once the fallback's result was seen, the primary's
    answer is let go (a hung call closed), and the job watched until that call ended and
    ``after(run)`` holds (the service's races read into ``run.races`` at each of those looks)."""
    tag = f"drill-{uuid.uuid4().hex[:12]}"
    first, second = fakes["primary"].app, fakes["fallback"].app
    first.script_tag(tag, primary, hold=primary != "hang")
    second.script_tag(tag, "conformant", hold=failed)
    run = Run(post(url, tag, f"Summarise ticket {tag}.").json())
    with httpx.Client(timeout=10, headers=OWNER, verify=tls()) as client:
        if failed:
            watch(client, url, run, lambda: run.seen[-1] == ("failed", None))
            second.let_go(tag)
        watch(client, url, run, lambda: run.providers()[-1:] == ["fallback"])
        first.release(tag)  # a held answer goes; a hung call is closed
        watch(client, url, run, lambda: first.open_calls(tag) == 0 and after(run), races=True)
        watch(client, url, run, lambda: True, races=True)  # once more: what the service did
    run.primary, run.fallback = first.received_tag(tag), second.received_tag(tag)
    return run


def watch(client: httpx.Client, url: str, run: Run, done: Callable[[], bool], *,
          races: bool = False) -> None:
    """Look at the job until ``done()`` holds after a look (within 15 s); with ``races``, the
    service's races are read into ``run.races`` at each look too."""
    began, pause = time.monotonic(), threading.Event()  # never set: wait() is the interval
    while True:
        job = client.get(f"{url}/jobs/{run.job['id']}").json()
        state = (job["status"], answered_by(job))
        if not run.seen or run.seen[-1] != state:
            run.seen.append(state)
        if races:
            run.races = client.get(f"{url}/jobs/{run.job['id']}/races").json()
        if done():
            return
        assert time.monotonic() - began < 15, f"job still changing: {run.seen}"
        pause.wait(0.02)  # observing a black box: polling is all it offers


def test_timeout_marks_failed_and_late_answer_overwrites(start_service: Any,
                                                         fakes: dict[str, Any]) -> None:
    # the service abandons a primary call only after 30 s: the held answers decide the order
    url = start(start_service, fakes, "timeout_fails_service.py", "--abandon-after", "30")
    hang = held_run(url, fakes, "hang")
    assert ("failed", None) in hang.seen, hang.seen  # the timeout taken for a failure
    assert hang.providers() == ["fallback"] and hang.billed == 2
    late = held_run(url, fakes, "conformant", after=lambda run: len(run.results()) == 2)
    assert ("failed", None) in late.seen
    assert late.providers() == ["fallback", "primary"], late.seen  # overwritten
    assert late.billed == 2


def test_primary_not_aborted_replaces_the_reply(start_service: Any,
                                                fakes: dict[str, Any]) -> None:
    # the primary's answer held until the fallback's result was seen (a service that waits 30 s
    # on its calls, so that the answer still reaches it however loaded; with 0.9 s against its
    # default 1.5 s, a loaded machine's answer once came after the call was abandoned)
    url = start(start_service, fakes, "no_abort_service.py", "--abandon-after", "30")
    late = held_run(url, fakes, "conformant", failed=False,
                    after=lambda run: len(run.results()) == 2)
    assert late.providers() == ["fallback", "primary"], late.seen  # the reply replaced
    assert ("failed", None) not in late.seen and late.billed == 2
    hang = held_run(url, fakes, "hang", failed=False)
    assert hang.providers() == ["fallback"] and hang.billed == 2


def test_redis_queue_redelivers_a_running_job(start_service: Any, fakes: dict[str, Any],
                                              redis_url: str) -> None:
    # Two windows of the service's own timers: the conformant job must be acked within its
    # lease, and the hung job's redelivery must reach the primary before the first call's
    # timeout. Leased for 0.3 x a 2 s timeout: 0.6 s and 1.4 s. (With 0.3 x 0.5 s, 0.15 s and
    # 0.35 s, a loaded CI machine acked the conformant job after its lease: delivered again,
    # billed 2; with 0.6 x 0.5 s it once missed the second window by 0.05 s.)
    url = start(start_service, fakes, "redis_queue_service.py", "--redis", redis_url,
                "--visibility", str(0.3 * QUEUE_TIMEOUT_S), timeout_s=QUEUE_TIMEOUT_S)
    assert submit(url, fakes, "conformant", watch_s=0).billed == 1
    hang = submit(url, fakes, "hang", primary_calls=2, redeliveries=True)
    first, second = hang.primary[:2]
    assert second.at < (first.ended_at or 0)  # delivered again while the first still waited
    assert hang.billed >= 3 and hang.providers() == ["fallback"]
    assert len(hang.races) == len(hang.fallback) - 1  # the compare-and-swap still holds


@pytest.mark.parametrize("behaviour", ["conformant", "status:500", "hang"])
def test_redelivery_rewrites_a_completed_result(start_service: Any, fakes: dict[str, Any],
                                                redis_url: str, behaviour: str) -> None:
    """Celery's acks_late with a visibility timeout shorter than the task: the job is run again
    after it was complete, and the second run's answer replaces the first."""
    url = start(start_service, fakes, "redis_redelivery_service.py", "--redis", redis_url,
                "--visibility", str(VISIBILITY_S), "--followup", str(FOLLOWUP_S))
    run = submit(url, fakes, behaviour, primary_calls=2, results=2)
    first, rerun = run.results()  # two completed results, one after the other
    assert first != rerun, run.seen
    assert run.seen.index(("succeeded", rerun)) > run.seen.index(("succeeded", first))
    first_calls = [c for c in run.primary + run.fallback if c.at < run.primary[1].at]
    assert all(c.ended_at is not None and c.ended_at <= run.primary[1].at for c in first_calls)
    assert run.primary[1].at - run.primary[0].at >= VISIBILITY_S / 2  # the lease, not a race
    assert run.races == []  # nothing recorded: the overwrite is silent


def test_the_correct_service_never_rewrites_a_result(start_service: Any,
                                                     fakes: dict[str, Any]) -> None:
    url = start(start_service, fakes, "correct_service.py")
    for behaviour in ("conformant", "status:500", "hang"):  # watched as long as the twin
        run = submit(url, fakes, behaviour, watch_s=VISIBILITY_S + 1)
        assert len(run.results()) == 1 and len(run.primary) == 1, (behaviour, run.seen)


def double_click(url: str, key: str, clicks: int = 2) -> list[httpx.Response]:
    """``clicks`` submits of one intent released together from a barrier (a true double
    click), each on a connection of its own opened before the barrier."""
    barrier = threading.Barrier(clicks, timeout=10)
    answers: list[httpx.Response] = []
    clients = [httpx.Client(timeout=10, verify=tls()) for _ in range(clicks)]
    for client in clients:  # connect first, so the barrier releases the requests themselves
        client.get(f"{url}/healthz")

    def click(client: httpx.Client) -> None:
        barrier.wait()
        answers.append(client.post(f"{url}/jobs", json={"text": f"Summarise {key}."},
                                   headers={"Idempotency-Key": key, **OWNER}))

    threads = [threading.Thread(target=click, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    for client in clients:
        client.close()
    assert len(answers) == clicks
    return answers


@pytest.mark.parametrize("defect", ["none", "check-then-insert"])
def test_check_then_insert_makes_two_jobs_on_a_true_double_click(
        start_service: Any, fakes: dict[str, Any], defect: str) -> None:
    url = start(start_service, fakes, "correct_service.py", "--defect", defect)
    jobs = []
    for _ in range(10):
        answers = double_click(url, f"k-{uuid.uuid4().hex[:8]}")
        jobs.append(len({a.json()["id"] for a in answers}))
        statuses = sorted(a.status_code for a in answers)
        assert statuses == ([201, 201] if defect != "none" else [200, 201]), answers
    assert jobs == ([2] * 10 if defect != "none" else [1] * 10)
    # one after the other (today's drill: the 2nd submit after the 1st was answered): one job
    first, second = post(url, "k-seq", "a"), post(url, "k-seq", "a")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]


class HeldFallback:
    """A fallback on the Anthropic wire whose answer is held until the test releases it: it
    records when a call arrived (``arrived``) and answers once ``release`` is set."""

    def __init__(self) -> None:
        self.arrived, self.release = threading.Event(), threading.Event()
        self.calls: list[str] = []
        held = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                held.calls.append(body["messages"][0]["content"])
                held.arrived.set()
                assert held.release.wait(10), "the test never released the answer"
                data = json.dumps({
                    "id": "msg_held", "type": "message", "role": "assistant",
                    "model": body["model"], "stop_reason": "end_turn", "stop_sequence": None,
                    "content": [{"type": "text", "text": "the held answer"}],
                    "usage": {"input_tokens": 1, "output_tokens": 3}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(("script", "shown"), [("brief_failed_service.py", "failed"),
                                               ("correct_service.py", "running")])
def test_failed_is_shown_until_the_fallback_answers(start_service: Any, fakes: dict[str, Any],
                                                    script: str, shown: str) -> None:
    """The fallback's answer is held: what the job shows between the primary's timeout and
    the fallback's answer is seen every time, not when timing allows."""
    held = HeldFallback()
    try:
        url = start(start_service, fakes, script, fallback_port=held.port)
        fakes["primary"].app.set_behaviour("hang")
        job = post(url, "k-held", "Summarise ticket k-held.").json()
        assert held.arrived.wait(10)  # the primary timed out, the fallback was asked
        with httpx.Client(timeout=10, headers=OWNER, verify=tls()) as client:
            status = client.get(f"{url}/jobs/{job['id']}").json()["status"]
            assert status == shown
            held.release.set()
            pause = threading.Event()
            while (job := client.get(f"{url}/jobs/{job['id']}").json())["status"] != "succeeded":
                pause.wait(0.02)  # observing a black box: polling is all it offers
        assert job["result"] == {"text": "the held answer"} and job["provider"] == "anthropic"
        assert len(held.calls) == 1
    finally:
        held.close()


@pytest.mark.parametrize("script", ["correct_service.py", "no_abort_service.py"])
def test_the_api(start_service: Any, fakes: dict[str, Any], script: str) -> None:
    url = start(start_service, fakes, script)
    first, other = post(url, "k1", "a"), post(url, "k1", "b")
    assert (first.status_code, other.status_code) == (201, 409)
    assert other.json() == {"error": "idempotency_key_reused"}
    again = post(url, "k1", "a")
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert set(first.json()) == {"id", "status", "result", "provider"}
    assert post(url, "k1", "b", owner="bob").status_code == 201  # keys are per owner
    job = f"{url}/jobs/{first.json()['id']}"
    assert httpx.get(job, headers={"X-Owner": "bob"}, verify=tls()).status_code == 404
    assert httpx.get(job, verify=tls()).status_code == 401
    assert httpx.get(job, headers=OWNER, verify=tls()).json()["id"] == first.json()["id"]
    assert httpx.get(f"{job}/attempts", headers=OWNER, verify=tls()).status_code == 200
    key = {"Idempotency-Key": "k2"}
    for body, headers, status, error in (
            ({"text": "c"}, {**key}, 401, "owner_missing"),
            ({"text": "c"}, {**OWNER}, 400, "idempotency_key_missing"),
            ({"text": "c", "n": 1}, {**key, **OWNER}, 422, "invalid_body"),
            ({"prompt": "c"}, {**key, **OWNER}, 422, "invalid_body"),
            (["c"], {**key, **OWNER}, 422, "invalid_body"),
            ({"text": 3}, {**key, **OWNER}, 422, "invalid_body")):
        answer = httpx.post(f"{url}/jobs", json=body, headers=headers, verify=tls())
        assert (answer.status_code, answer.json()["error"]) == (status, error), body


@pytest.mark.parametrize("defect", ["none", "owner-blind", "replay-other-body",
                                    "refuse-creates"])
def test_the_api_twins_break_their_rule(start_service: Any, fakes: dict[str, Any],
                                        defect: str) -> None:
    url = start(start_service, fakes, "correct_service.py", "--defect", defect)
    first = post(url, "k1", "a")
    if defect == "refuse-creates":  # every create, however right
        assert (first.status_code, first.json()["error"]) == (422, "invalid_body")
        assert post(url, "k2", "b", owner="bob").status_code == 422
        return
    assert first.status_code == 201
    other = post(url, "k1", "b")  # the same owner, another body under the key
    if defect == "replay-other-body":
        assert other.status_code == 200 and other.json()["id"] == first.json()["id"]
    else:
        assert other.status_code == 409
    bobs = post(url, "k1", "a", owner="bob")  # another owner, the same key and body
    peek = httpx.get(f"{url}/jobs/{first.json()['id']}", headers={"X-Owner": "bob"},
                     verify=tls())
    if defect == "owner-blind":  # keys are global, and bob sees alice's job
        assert bobs.status_code == 200 and bobs.json()["id"] == first.json()["id"]
        assert peek.status_code == 200
    else:
        assert bobs.status_code == 201 and bobs.json()["id"] != first.json()["id"]
        assert peek.status_code == 404


def test_the_twins_recall_is_judged_on_their_rule_only() -> None:
    """bench/drill_recall.recall: a twin passes when its rule broke in >= 95 % of its drills'
    intents (other promises and drills do not count), the correct example when nothing broke;
    an example not measured is unknown, never passed."""
    def counts(broken: int, held: int) -> dict[str, int]:
        return {"broken": broken, "held": held, "unknown": 0}

    rates: dict[str, drill_recall.Rates | str] = {
        "brief-failed": {"hang": {"timeout_not_failure": counts(20, 0)},
                         "late": {"timeout_not_failure": counts(19, 1)},
                         "double-click": {"timeout_not_failure": counts(20, 0)},
                         "control": {"timeout_not_failure": counts(0, 20)}},
        "check-then-insert": {"double-click": {"one_job": counts(18, 2)}},  # the old name
        "correct": {"late": {"one_winner": counts(1, 19)}},
        "redis-redelivery": "not measured: no Redis",
    }
    figures = drill_recall.recall(rates)
    assert figures["brief-failed"]["verdict"] == "pass"
    assert figures["brief-failed"]["share"] == round(59 / 60, 3)
    assert figures["check-then-insert"]["verdict"] == "fail"  # 90 % < 95 %
    assert figures["correct"]["verdict"] == "fail"
    assert figures["redis-redelivery"]["verdict"] == "unknown"


@pytest.mark.parametrize(("script", "waits_in"), [("correct_service.py", "serve_forever"),
                                                  ("no_abort_service.py", "asyncio_run")])
def test_a_service_prints_every_threads_stack_on_sigusr1_and_runs_on(
        start_service: Any, fakes: dict[str, Any], script: str, waits_in: str) -> None:
    # what a drill test shows of a service that left intents without evidence: every thread's
    # stack up to the end line (SIGUSR1; tests/drill/conftest.py's Service.stacks)
    env = provider_env(fakes["primary"].port, fakes["fallback"].port)
    service = start_service(script, ["--timeout", str(TIMEOUT_S)], env)
    stacks = service.stacks()
    lines = stacks.splitlines()
    assert re.fullmatch(rf"{script}: process {service.process.pid}: state [RS]; threads: .+",
                        lines[0]), stacks
    assert "no end of its stacks" not in stacks  # the consistent picture, not the C fallback
    assert any(line.startswith("Thread 0x") for line in lines), stacks
    assert any(f"in {waits_in}" in line for line in lines), stacks  # the main thread's wait
    assert any(line.strip().startswith(f'File "{EXAMPLES / script}"') for line in lines), stacks
    # the dump did not stop it, and the next one holds the main thread once, not the last dump
    assert post(service.url, "k1", "a").status_code == 201
    assert sum(f"in {waits_in}" in line for line in service.stacks().splitlines()) == 1


#: a service whose threads cannot run: after its answer to ``POST /freeze``, one thread sits in a
#: C call that keeps the interpreter's lock (ctypes.PyDLL never releases it), with SIGUSR1 and
#: SIGUSR2 blocked there so that the kernel hands both to the main thread; that one then waits
#: for the lock forever, so jobkit's SIGUSR1 handler (Python code) can never run
FROZEN_SERVICE = '''
import ctypes, signal, sys, threading
from http.server import BaseHTTPRequestHandler, HTTPServer
sys.path.insert(0, {drill!r})
import jobkit

jobkit.stacks_on_signal()


def hold_the_interpreters_lock():
    signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGUSR1, signal.SIGUSR2}})
    print("frozen", flush=True)
    ctypes.PyDLL(None).sleep(60)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.do_GET()
        self.wfile.flush()
        threading.Thread(target=hold_the_interpreters_lock, name="frozen").start()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{{server.server_port}}", flush=True)
server.serve_forever()
'''


def test_a_service_whose_threads_cannot_run_prints_its_stacks_from_c_on_sigusr2(
        start_service: Any, tmp_path: Path) -> None:
    # the freeze a drill once met (a service silent for seconds, its watcher thread too): the
    # Python dump cannot come, so Service.stacks falls back to faulthandler's, read without the
    # interpreter's lock
    script = tmp_path / "frozen_service.py"
    script.write_text(FROZEN_SERVICE.format(drill=str(EXAMPLES)), encoding="utf-8")
    service = start_service(str(script), [], {"PYTHONUNBUFFERED": "1"})
    assert httpx.post(f"{service.url}/freeze", timeout=10).status_code == 200
    printed = None
    while printed != "frozen\n":  # the thread is in place (its answer came first)
        printed = service._lines.get(timeout=10)
        assert printed, service.log.read_text(encoding="utf-8")  # "": it exited
    # and holds the lock: the main thread, whose loop answered /healthz, answers no more
    with pytest.raises(httpx.TimeoutException):
        httpx.get(f"{service.url}/healthz", timeout=1.0)
    stacks = service.stacks(first_s=3.0)
    lines = stacks.splitlines()
    assert re.match(rf"{re.escape(str(script))}: process {service.process.pid}: state [RS];",
                    lines[0]), stacks
    fallback = lines.index("(no end of its stacks within 3.0 s of SIGUSR1: its threads do not "
                           "run; SIGUSR2, the stacks from C:)")
    assert fallback == 1, stacks  # nothing of the Python dump came
    from_c = lines[fallback + 1:]
    # faulthandler's format: every thread, most recent call first, the frozen one in its C call
    assert sum(line.startswith(("Thread 0x", "Current thread 0x")) for line in from_c) >= 2, stacks
    assert any(re.fullmatch(rf'  File "{re.escape(str(script))}", line \d+ in '
                            r"hold_the_interpreters_lock", line) for line in from_c), stacks
    assert any(line.endswith(" in serve_forever") for line in from_c), stacks  # the main thread
