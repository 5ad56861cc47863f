"""The drill's provider fakes on a loopback socket: each intent's tag gets its own script, every
answer names the call it came from, a hung call the drill gives up on is released (billed), and
the engine's watcher hears of every arrival and end."""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import httpx
import pytest

from harness.providers.fake_server import FakeServer
from harness.providers.holds import AfterAnswer
from harness.providers.prompts import prompt_key
from harness.providers.received import SIGNATURE, signature
from harness.providers.recording import RecordingFake

A, B = "drill-aaaaaaaaaaaa", "drill-bbbbbbbbbbbb"
AUTH = {"Authorization": "Bearer not-a-secret"}


def _body(tag: str) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": f"summarise {tag}"}]}


def test_engine_fake_scripts_each_tag_and_signs_each_answer() -> None:
    fake = RecordingFake("openai-chat", name="gpt", signed=True)
    fake.script_tag(A, "status:529")
    with FakeServer(fake) as server, \
            httpx.Client(base_url=f"{server.url}/v1", headers=AUTH) as client:
        refused = client.post("/chat/completions", json=_body(A))
        answered = client.post("/chat/completions", json=_body(B))  # unscripted: answers
    assert refused.status_code == 529
    text = answered.json()["choices"][0]["message"]["content"]
    assert text == signature("gpt", 2, B)
    match = SIGNATURE.search(text)
    assert match is not None and (match.group(1), match.group(2)) == ("gpt", "2")
    records = {r.tag: r for r in fake.received()}
    assert (records[A].outcome, records[A].billed) == ("refused", False)
    assert (records[B].outcome, records[B].billed) == ("answered", True)


def test_engine_fake_streams_a_signed_answer_on_the_anthropic_wire() -> None:
    fake = RecordingFake("anthropic-messages", name="claude", signed=True)
    body = {"model": "m", "max_tokens": 8, "stream": True,
            "messages": [{"role": "user", "content": f"t {A}"}]}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    with FakeServer(fake) as server, httpx.Client(base_url=server.url) as client:
        text = client.post("/v1/messages", json=body, headers=headers).text
    pieces = [line for line in text.splitlines() if '"text_delta"' in line]
    assert len(pieces) == 3 and "message_stop" in text
    assert fake.received()[0].stream and fake.received()[0].outcome == "answered"


def test_engine_fake_releases_a_hung_call_the_caller_never_left() -> None:
    fake = RecordingFake("openai-chat", name="gpt", signed=True)
    fake.script_tag(A, "hang")
    changes: list[str | None] = []
    fake.on_change = changes.append
    errors: list[BaseException] = []
    with FakeServer(fake) as server, httpx.Client(base_url=f"{server.url}/v1",
                                                    timeout=30, headers=AUTH) as client:
        def call() -> None:
            try:
                client.post("/chat/completions", json=_body(A))
            except httpx.HTTPError as exc:  # the release resets the connection
                errors.append(exc)
        caller = threading.Thread(target=call)
        caller.start()
        assert fake.wait_arrival(A, 10)
        assert fake.open_calls(A) == 1
        fake.release(A)
        assert fake.wait_settled_tag(A, 10)
        caller.join(timeout=10)
    [record] = fake.received()
    assert (record.outcome, record.billed) == ("released", True)
    assert errors and changes == [A, A]  # arrived, ended


def test_engine_fake_keeps_concurrent_intents_apart() -> None:
    fake = RecordingFake("openai-chat", name="gpt", signed=True)
    tags = [f"drill-{i:012x}" for i in range(16)]
    for i, tag in enumerate(tags):
        fake.script_tag(tag, "status:500" if i % 2 else "conformant")
    with FakeServer(fake) as server, \
            httpx.Client(base_url=f"{server.url}/v1", headers=AUTH) as client, \
            ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda t: client.post("/chat/completions",
                                                    json=_body(t)).status_code, tags))
    assert codes == [500 if i % 2 else 200 for i in range(16)]
    by_tag = {r.tag: r.outcome for r in fake.received()}
    assert by_tag == {t: "refused" if i % 2 else "answered" for i, t in enumerate(tags)}


def test_engine_fake_refuses_an_unknown_script() -> None:
    fake = RecordingFake("openai-chat")
    with pytest.raises(ValueError, match="unknown behaviour"):
        fake.script_tag(A, "explode")


def test_engine_fake_says_how_a_held_answer_went() -> None:
    """A held answer goes when the drill lets it go (``freed`` "drill"), or, never let go, at
    the hold's backstop ("backstop"); each record says which and when."""
    fake = RecordingFake("openai-chat", name="gpt", signed=True)
    fake.script_tag(A, "conformant", hold=True)  # no backstop: only the drill lets it go
    fake.script_tag(B, "conformant", hold=True, hold_max_s=0.05)  # never let go
    with FakeServer(fake) as server, ThreadPoolExecutor(1) as pool, \
            httpx.Client(base_url=f"{server.url}/v1", timeout=30, headers=AUTH) as client:
        held = pool.submit(client.post, "/chat/completions", json=_body(A))
        assert fake.wait_arrival(A, 10) and fake.holding(A)
        fake.let_go(A)
        assert held.result(timeout=30).status_code == 200
        assert client.post("/chat/completions", json=_body(B)).status_code == 200
    records = {r.tag: r for r in fake.received()}
    assert (records[A].held, records[A].freed) == (True, "drill")
    assert (records[B].held, records[B].freed) == (True, "backstop")
    b = records[B]
    assert b.freed_at is not None and b.freed_at >= b.at + 0.05 - 0.001


def test_a_tags_answers_go_one_at_a_time_with_a_look_in_between_at_any_fake() -> None:
    """Two fakes share one AfterAnswer. The first answer of a tag goes at once (``waited``
    None); two answers let go together go one at a time: the second waits until a look saw
    the job complete after the first was delivered (one before it, or one that saw the job
    still running, does not free it); a re-run's call at the other fake, after those answers,
    waits for a look (whatever it saw) that began after it arrived; never looked at, an answer
    goes at its backstop."""
    after = AfterAnswer()
    # one clock for both, as a drill gives its fakes (harness/drill/serving.py): the shared
    # AfterAnswer compares one fake's times with the other's (with a clock each, the second
    # fake's made 0.5 s later on a loaded machine, the re-run's call seemed to arrive before
    # the answer it follows, and waited for a look that saw the job complete)
    epoch = time.monotonic()
    gpt = RecordingFake("openai-chat", name="gpt", signed=True, after_answer=after, epoch=epoch)
    claude = RecordingFake("openai-chat", name="claude", signed=True, after_answer=after,
                           epoch=epoch)
    gpt.script_tag(A, "conformant", hold=True, look_max_s=30)  # held by the drill's script
    claude.script_tag(A, "conformant", look_max_s=30)
    gpt.script_tag(B, "conformant", look_max_s=0.05)
    with FakeServer(gpt) as g, FakeServer(claude) as c, ThreadPoolExecutor(2) as pool, \
            httpx.Client(timeout=30, headers=AUTH) as client:
        def post(server: FakeServer, tag: str) -> int:
            return client.post(f"{server.url}/v1/chat/completions", json=_body(tag)).status_code

        both = [pool.submit(post, g, A) for _ in range(2)]  # held together by the script
        assert gpt.wait_arrival(A, 10, count=2)
        after.looked(A, began=gpt.now(), complete=True)  # seen complete before the answer
        gpt.let_go(A)  # one answer goes, the other waits for its turn and a look
        assert after.waiting(A, 10)
        finished, still = wait(both, timeout=30, return_when=FIRST_COMPLETED)
        assert len(finished) == len(still) == 1, (finished, still)
        [done], [waiting] = finished, still
        assert done.result() == 200 and gpt.wait_ended(A, 10)
        after.looked(A, began=gpt.now())  # after it, but the job not seen complete
        assert after.waiting(A) and not waiting.done() and not after.seen_complete(A)
        after.looked(A, began=gpt.now(), complete=True)
        assert waiting.result(timeout=30) == 200 and gpt.wait_ended(A, 10, count=2)
        rerun = pool.submit(post, c, A)  # at the other fake, after both answers
        assert claude.wait_arrival(A, 10) and after.waiting(A, 10)
        after.looked(A, began=claude.received_tag(A)[0].at - 0.001)  # before it arrived
        assert after.waiting(A) and not rerun.done()
        after.looked(A, began=claude.now())
        assert rerun.result(timeout=30) == 200
        assert post(g, B) == 200 and post(g, B) == 200  # B's second answer: nobody looks
    assert sorted(str(r.waited) for r in gpt.received_tag(A)) == ["None", "drill"]
    assert claude.received_tag(A)[0].waited == "drill"
    b1, b2 = gpt.received_tag(B)
    assert (b1.waited, b2.waited) == (None, "backstop")
    assert b2.ended_at is not None and b2.ended_at >= b2.at + 0.05 - 0.001


def test_a_waiting_answer_to_another_question_goes_once_the_first_was_delivered() -> None:
    """Two calls of one tag held together, asking different things (two steps of a job): the
    second waits only until the first answer was delivered, not for the job to be seen
    complete (which may need it); the same question would wait for that. Each record keeps
    what it asked as a key, the same for the same conversation on either wire."""
    after = AfterAnswer()
    gpt = RecordingFake("openai-chat", name="gpt", signed=True, after_answer=after)
    gpt.script_tag(A, "conformant", hold=True, look_max_s=30)

    def body(text: str) -> dict[str, object]:
        return {"model": "m", "messages": [{"role": "user", "content": f"{text} {A}"}]}

    with FakeServer(gpt) as g, ThreadPoolExecutor(2) as pool, \
            httpx.Client(base_url=f"{g.url}/v1", timeout=30, headers=AUTH) as client:
        steps = [pool.submit(client.post, "/chat/completions", json=body(text))
                 for text in ("summarise", "classify")]
        assert gpt.wait_arrival(A, 10, count=2)
        gpt.let_go(A)
        assert [f.result(timeout=30).status_code for f in steps] == [200, 200]
    first, second = gpt.received_tag(A)
    assert first.prompt and second.prompt and first.prompt != second.prompt
    assert prompt_key({"system": "be brief", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}]}) == prompt_key(
        {"messages": [{"role": "system", "content": "be brief"},
                      {"role": "user", "content": "hi"}]})
