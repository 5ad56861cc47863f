"""A target profile that describes API.md itself gives no false alarm (qa Q4): the key-reused
answer is a create's only, a body's own API.md code wins, top-level JSON arrays are lists, an
answer the harness cannot read is unknown (with the profile fix), and a profile may leave
``operations:`` out (then it speaks API.md). Profile errors say what is allowed (qa Q11)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.domain.clock import EPOCH, ManualClock
from harness.domain.errors import ConfigError
from harness.scenarios.checkers import CHECKERS
from harness.scenarios.checkers.base import UNREADABLE_FIX
from harness.scenarios.targets.base import Reply
from harness.scenarios.targets.service import ProfileTarget, load_profile
from tests.scenarios.conftest import HistoryBuilder

OBSERVERS_ONLY = """\
name: api-md-with-a-counter
side_effects:
  http: {method: GET, path: /_stats, field: jobs}
"""


def _target(tmp_path: Path, answer: Callable[[httpx.Request], httpx.Response],
            profile: str = OBSERVERS_ONLY) -> ProfileTarget:
    path = tmp_path / "p.profile.yaml"
    path.write_text(profile, "utf-8")
    return ProfileTarget("http://svc.test", path, transport=httpx.MockTransport(answer), env={})


def _call(target: ProfileTarget, method: str, *args: Any) -> Reply:
    with target.session(ManualClock(EPOCH), "r1", 1) as session:
        result: Reply = getattr(session, method)(*args)
        return result


def test_a_profile_without_operations_speaks_api_md(tmp_path: Path) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        return httpx.Response(200, json=[{"id": "a1", "job_id": "j1", "state": "running"}])

    target = _target(tmp_path, answer)
    assert {"jobs", "attempts", "timeouts", "hedge", "side_effects"} <= target.capabilities
    reply = _call(target, "list_attempts", "alice", "j1")
    assert seen[-1] == "GET /v1/jobs/j1/attempts"
    assert reply.body == [{"id": "a1", "job_id": "j1", "state": "running"}]
    assert target.unmapped("read") == frozenset()  # API.md's fields, all of them


@pytest.mark.parametrize("items", ["", "items: .\n"])
def test_a_top_level_array_is_the_list(tmp_path: Path, items: str) -> None:
    profile = OBSERVERS_ONLY + f"""\
capabilities: [jobs, attempts]
operations:
  create_job: {{method: POST, path: /v1/jobs, key_header: Idempotency-Key}}
  get_job: {{path: "/v1/jobs/{{job_id}}"}}
  start_attempt: {{method: POST, path: "/v1/jobs/{{job_id}}/attempts"}}
  post_event: {{method: POST, path: "/v1/attempts/{{attempt_id}}/events"}}
  list_attempts: {{path: "/v1/jobs/{{job_id}}/attempts"}}
  list_races:
    path: "/v1/jobs/{{job_id}}/races"
    {items.strip()}
"""
    races = [{"attempt_id": "a1", "winner_attempt_id": "a2", "reason": "lost"}]
    target = _target(tmp_path, lambda r: httpx.Response(200, json=races), profile)
    assert _call(target, "list_races", "alice", "j1").body == races


@pytest.mark.parametrize(("code", "expected"), [
    ("attempt_in_flight", "attempt_in_flight"), ("job_completed", "job_completed")])
def test_a_409_on_an_attempt_is_never_a_reused_key(tmp_path: Path, code: str,
                                                   expected: str) -> None:
    body = {"code": code, "status": 409, "blocking_attempt_id": "a0"}
    target = _target(tmp_path, lambda r: httpx.Response(409, json=body))
    reply = _call(target, "start_attempt", "alice", "j1", "p")
    assert reply.code == expected
    assert reply.body["blocking_attempt_id"] == "a0"


@pytest.mark.parametrize(("body", "expected"), [
    ({"code": "idempotency_key_reused"}, "idempotency_key_reused"),
    (None, "idempotency_key_reused"),                  # the declared status, no body
    ({"code": "their_own_name"}, "idempotency_key_reused"),  # not one of API.md's codes
    ({"code": "invalid_request"}, "invalid_request"),  # API.md's code wins
])
def test_a_creates_conflict_answer_and_a_body_code(tmp_path: Path, body: Any,
                                                   expected: str) -> None:
    target = _target(tmp_path, lambda r: httpx.Response(409, content=json.dumps(body).encode()
                                                        if body else b""))
    assert _call(target, "create_job", "alice", "k", "{}").code == expected


def test_an_unreadable_answer_is_unknown_with_the_profile_fix() -> None:
    h = HistoryBuilder()
    h.create("job", created=True)
    h.op("alice", "races", {"owner": "alice", "job": "job", "expect": {"count": 1}}, "ok",
         {"malformed": True})
    result = CHECKERS["scripted_outcomes"](h.ops)
    assert result.verdict == "unknown", result
    assert "could not be read" in result.unknowns[0]
    assert result.fixes == (UNREADABLE_FIX,) and "items: ." in UNREADABLE_FIX


@pytest.mark.parametrize(("text", "message", "fix"), [
    ("name: x\ncapabilites: [jobs]\n", "unknown field 'capabilites' (did you mean "
     "'capabilities'?)", "the fields here are: name, capabilities,"),
    ("name: x\ncapabilities: [jobs, atempts]\n", "'atempts' is not allowed here (did you mean "
     "'attempts'?)", "write one of: jobs, attempts, timeouts, hedge, owners, replicas"),
    ("name: x\noperations:\n  create_job: {path: v1/jobs, key_header: K}\n  get_job: {path: /j}\n",
     "'v1/jobs' is not a path: a path starts with /", "write /v1/jobs"),
    ("name: x\nconflict: nope\n", "'nope' is not allowed here (did you mean 'none'?)",
     "write one of: none, or a mapping with the fields: status, code_field, code"),
    ("name: x\noperations:\n  list_races: {path: /r, items: ''}\n", "'' names nothing",
     "write items: . for a top-level JSON array"),
    # a service's status mapped to a word API.md does not have: named with the field, the
    # value and the words, near ('sucess') or far ('done_ok') from the one meant
    ("name: x\noperations:\n  get_job: {path: /j, fields: {status: state}, values: {status: "
     "{done: sucess}}}\n", "maps status 'done' to 'sucess', which is not one of API.md's "
     "status words (did you mean 'succeeded'?)", "values.status.done must be one of: pending, "
     "running, succeeded, failed, cancelled"),
    ("name: x\noperations:\n  get_job: {path: /j, fields: {status: state}, values: {status: "
     "{done: done_ok}}}\n", "maps status 'done' to 'done_ok', which is not one of API.md's "
     "status words", "values.status.done must be one of: pending, running, succeeded"),
])
def test_profile_errors_say_what_is_allowed(tmp_path: Path, text: str, message: str,
                                            fix: str) -> None:
    path = tmp_path / "bad.profile.yaml"
    path.write_text(text, "utf-8")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    assert message in caught.value.message
    assert fix in (caught.value.fix or "")
    assert caught.value.line is not None
    assert "Input should" not in str(caught.value) and "pattern" not in str(caught.value)


def test_owners_is_a_capability_a_profile_may_list(tmp_path: Path) -> None:
    path = tmp_path / "p.profile.yaml"
    path.write_text("name: x\ncapabilities: [jobs, owners]\n", "utf-8")
    assert "owners" in load_profile(path).capabilities
