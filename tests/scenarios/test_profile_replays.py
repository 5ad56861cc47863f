"""The profile values of issue 26: unmarked replays, keys that never expire, and fingerprints
as idempotency layers compute them (JavaScript's JSON.stringify of the parsed body; none)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from harness.scenarios.targets.base import Reply
from harness.scenarios.targets.service import ProfileSession, ProfileTarget
from harness.target.fingerprints import js_stringify

BASE = """\
name: layer
capabilities: [jobs]
in_flight: {status: 409, max_wait_s: 0.3}
operations:
  create_job: {method: POST, path: /orders, key_header: Idempotency-Key}
  get_job: {method: GET, path: "/orders/{job_id}"}
"""
SPELLINGS = [
    '{"a":1,"b":[1,2]}', '{ "a" : 1.0, "b" : [1e0, 2] }', '{"b":[1,2],"a":1}',
    '{"a":10,"b":[1,2]}', '{"a":1e1,"b":[1,2]}', '{"2":0,"1":0,"x":1}', '{"x":1,"1":0,"2":0}',
    '{"a":"caf\\u00e9"}', '{"a":"café"}', '{"a":-0}', '{"a":0}', '{"a":12345678901234567890}',
    '{"a":12345678901234567891}', '{"a":0.1}', '{"a":1e-7}', '{"a":1E-07}', '{"a":true}',
    '{"a":null}', '{"a":1,"a":2}', '{"a":2}',
]


def _create_on(session: ProfileSession, now: list[float]) -> Reply:
    """One create on the session's own clock ``now[0]``, advanced by its waits: no real
    sleeping."""
    session.pause = lambda s: now.__setitem__(0, now[0] + s)  # type: ignore[method-assign]
    session.elapsed = lambda: now[0]  # type: ignore[method-assign]
    try:
        return session.create_job("alice", "k-1", '{"a":1}')
    finally:
        session.close()


def _target(tmp_path: Path, extra: str, answer: httpx.Response) -> ProfileTarget:
    path = tmp_path / "layer.profile.yaml"
    path.write_text(BASE + extra, encoding="utf-8")
    return ProfileTarget("http://layer.test", path, env={},
                         transport=httpx.MockTransport(lambda request: answer))


def test_parsed_json_counts_key_order_but_not_spelling_or_whitespace() -> None:
    assert js_stringify('{"a": 1.0,\n "b": [1e0, 2]}') == js_stringify('{"a":1,"b":[1,2]}')
    assert js_stringify('{"b":[1,2],"a":1}') != js_stringify('{"a":1,"b":[1,2]}')
    assert js_stringify('{"x":1,"2":0,"1":0}') == js_stringify('{"1":0,"2":0,"x":1}')


def test_parsed_json_agrees_with_javascript() -> None:
    """Two bodies are the same under parsed-json exactly when Node's JSON.stringify of their
    parsed values is the same text."""
    if shutil.which("node") is None:
        if os.environ.get("HARNESS_REQUIRE_NODE") == "1":
            pytest.fail("HARNESS_REQUIRE_NODE=1 but node is not installed")
        pytest.skip("node is not installed: JSON.stringify cannot be asked")
    script = ("const b = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(b.map((t) => JSON.stringify(JSON.parse(t)))));")
    done = subprocess.run(["node", "-e", script], input=json.dumps(SPELLINGS), text=True,
                          capture_output=True, timeout=60, check=True)
    theirs = json.loads(done.stdout)
    ours = [js_stringify(text) for text in SPELLINGS]
    for i in range(len(SPELLINGS)):
        for j in range(len(SPELLINGS)):
            assert (theirs[i] == theirs[j]) == (ours[i] == ours[j]), (SPELLINGS[i], SPELLINGS[j])


@pytest.mark.parametrize("replay", ["unmarked", "{status: 201, header: none}"])
def test_an_unmarked_201_is_no_observation(tmp_path: Path, replay: str) -> None:
    target = _target(tmp_path, f"replay: {replay}\n",
                     httpx.Response(201, json={"id": "o-1", "status": "pending"}))
    assert "created" in target.unmapped("create")  # expectations on it are not judged
    assert any("turned off" in w and "created:" in w for w in target.warnings)
    if replay != "unmarked":
        assert any("write replay: unmarked" in w for w in target.warnings)
    session = ProfileSession(target)
    try:
        reply = session.create_job("alice", "k-1", '{"a":1}')
    finally:
        session.close()
    assert reply.body["id"] == "o-1" and reply.replayed is None  # never counted a replay


def test_a_marked_profile_still_observes_created(tmp_path: Path) -> None:
    target = _target(tmp_path, "", httpx.Response(201, json={"id": "o-1"}))
    assert "created" not in target.unmapped("create") and not target.warnings


def test_lease_none_is_promised_and_a_stuck_key_is_asked_for_a_bounded_time(
        tmp_path: Path) -> None:
    target = _target(tmp_path, "lease_s: none\n", httpx.Response(409, json={"code": "busy"}))
    assert target.promises()["lease_ms"] == "none"
    reply = _create_on(ProfileSession(target), [0.0])
    assert reply.body == {"code": "still_in_progress", "status": 409}
    asked = dict(reply.busy)["in_flight"]
    assert asked < 50 and reply.busy_ms <= 300  # bounded by max_wait_s, well before the count


def test_a_busy_key_is_counted_held_from_the_first_busy_answer_to_the_last_busy_send(
        tmp_path: Path) -> None:
    """How long a key was surely in progress: a slow service's answers do not count as held
    time. Each answer here comes back 0.4 s of the session's clock after it was sent (the
    service slow, not the key), with backoff waits between the retries: the figure is the last
    busy request's sending minus the first busy answer, not the last answer minus the first
    send."""
    answers = iter([httpx.Response(409, json={"code": "busy"})] * 3
                   + [httpx.Response(201, json={"id": "j1", "status": "queued"})])
    now = [0.0]  # the session's clock, advanced by its own waits and by the slow answers

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 0.4
        return next(answers)

    path = tmp_path / "layer.profile.yaml"
    path.write_text(BASE + "lease_s: 10\n", encoding="utf-8")
    session = ProfileSession(ProfileTarget("http://layer.test", path, env={},
                                           transport=httpx.MockTransport(slow)))
    reply = _create_on(session, now)
    assert dict(reply.busy)["in_flight"] == 3
    # sends at 0, 0.4 + w1, 0.8 + w1 + w2: held from the first busy answer (0.4) to the third
    # send, 0.4 + w1 + w2 s (the old figure, the third answer minus the first send: 1.2 + …)
    w1, w2 = session._backoff(0, 0.0), session._backoff(1, 0.0)
    assert reply.busy_ms == round((0.4 + w1 + w2) * 1000, 1)
