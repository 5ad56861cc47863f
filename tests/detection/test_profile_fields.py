"""The profile fields that let a profile say what real middlewares do: a replay answered with
another status and the original body, no key-reuse answer, several named faults with headers
(a fresh key each time) or a command naming the target, headers on the counter."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from harness.domain.clock import EPOCH, ManualClock
from harness.domain.errors import ConfigError
from harness.scenarios.loader import load_scenario
from harness.scenarios.targets.base import TargetSession
from harness.scenarios.targets.service import ProfileTarget, load_profile

BASE: dict[str, Any] = {
    "name": "mock",
    "operations": {"create_job": {"method": "POST", "path": "/orders",
                                  "key_header": "Idempotency-Key", "fields": {"id": "id"}},
                   "get_job": {"path": "/orders/{job_id}", "fields": {"id": "id"}}},
}


class Orders:
    """An order service as a MockTransport: replays are 409 with the original body and no
    header; another body under a used key is 422; the fault endpoints and the counter record
    the headers they got."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if request.url.path == "/orders":
            key = request.headers["idempotency-key"]
            if key not in self.bodies:
                self.bodies[key] = request.content
                return httpx.Response(201, json={"id": f"o-{key}"})
            if self.bodies[key] != request.content:
                return httpx.Response(422, json={"error": "key_reused"})
            return httpx.Response(409, json={"id": f"o-{key}"})
        if request.url.path == "/count":
            return httpx.Response(200, json={"n": len(self.bodies)})
        return httpx.Response(204)


@pytest.fixture
def orders() -> Orders:
    return Orders()


@pytest.fixture
def session(tmp_path: Path, orders: Orders) -> Iterator[Callable[..., TargetSession]]:
    opened: list[Any] = []

    def open_(**fields: Any) -> TargetSession:
        path = tmp_path / f"p{len(opened)}.yaml"
        path.write_text(yaml.safe_dump({**BASE, **fields}), encoding="utf-8")
        target = ProfileTarget("http://orders.test", path, env={},
                               transport=httpx.MockTransport(orders))
        context = target.session(ManualClock(EPOCH), "run", 1)
        opened.append((target, context))
        return context.__enter__()

    yield open_
    for target, context in opened:
        context.__exit__(None, None, None)
        target.close()


def test_a_replay_answered_409_with_the_original_body_is_a_replay(
        session: Callable[..., TargetSession]) -> None:
    shaped = session(replay={"status": 409, "body": "original", "header": "none"},
                     conflict={"status": 422})
    first = shaped.create_job("alice", "k1", '{"a": 1}')
    again = shaped.create_job("alice", "k1", '{"a": 1}')
    other = shaped.create_job("alice", "k1", '{"a": 2}')
    assert (first.status, first.body["id"]) == (201, "o-k1")
    assert (again.status, again.body["id"], again.replayed) == (200, "o-k1", True)
    assert (other.status, other.code) == (422, "idempotency_key_reused")
    plain = session(conflict={"status": 422})  # without the shape: a 409 is a refusal
    assert plain.create_job("alice", "k1", '{"a": 1}').status == 409


def test_without_a_key_reuse_answer_a_refusal_counts_as_one(
        session: Callable[..., TargetSession]) -> None:
    none = session(conflict="none")
    none.create_job("alice", "k2", '{"a": 1}')
    assert none.create_job("alice", "k2", '{"a": 2}').code == "idempotency_key_reused"


def test_named_faults_with_a_fresh_key_each_time_and_a_default(
        session: Callable[..., TargetSession], orders: Orders) -> None:
    faults = {"raise": {"path": "/raise", "headers": {"Idempotency-Key": "{fresh_key}"}},
              "return-500": {"path": "/fail"}}
    named = session(faults=faults, default_fault="raise")
    for kind in ("handler_error", "raise", "return-500"):
        assert named.inject_fault(kind).ok  # type: ignore[attr-defined]
    hits = [(r.url.path, r.headers.get("idempotency-key")) for r in orders.seen]
    assert [path for path, _ in hits] == ["/raise", "/raise", "/fail"]
    keys = [key for _, key in hits[:2]]
    assert all(k and k.startswith("harness-") for k in keys) and keys[0] != keys[1]


def test_a_fault_command_names_the_target(session: Callable[..., TargetSession],
                                          tmp_path: Path) -> None:
    out = tmp_path / "armed"
    script = "import sys; open(sys.argv[2], 'w').write(sys.argv[1])"
    command = session(faults={"by-file": {"command": [sys.executable, "-c", script, "{target}",
                                                      str(out)]}})
    assert command.inject_fault("handler_error").ok  # type: ignore[attr-defined]
    assert out.read_text() == "http://orders.test"


def test_the_counter_sends_its_headers(session: Callable[..., TargetSession],
                                       orders: Orders) -> None:
    counted = session(side_effects={"http": {"path": "/count", "field": "n",
                                             "headers": {"X-Key": "{fresh_key}"}}})
    assert counted.count_side_effects() == 0  # type: ignore[attr-defined]
    assert orders.seen[-1].headers["x-key"].startswith("harness-")


def test_a_scenario_naming_a_fault_the_profile_lacks_is_not_applicable(
        tmp_path: Path, write_scenario: Callable[[str, str], Path]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**BASE, "faults": {"return-500": {"path": "/fail"}}}),
                    encoding="utf-8")
    scenario = load_scenario(write_scenario(
        "raises", "name: raises\nintents: {i: {contract: c, input: {}}}\nsteps:\n"
        "  - {at: 0, fault: raise}\n  - {at: 1, create: {key: k, intent: i}}\n"
        "checkers: [retry_after_failure_served]\n"))
    with ProfileTarget("http://orders.test", path, env={}) as target:
        reason = target.not_applicable(scenario)
    assert reason == ("needs the fault 'raise', which profile 'mock' does not declare under "
                      "faults: (it declares return-500)")


@pytest.mark.parametrize(("fields", "marker", "problem", "fix"), [
    ({"faults": {"raise": {"path": "/r"}}, "default_fault": "boom"}, "default_fault:",
     "default_fault names 'boom', which faults: does not declare", "write one of: raise"),
    ({"faults": {"raise": {"command": ["true"], "headers": {"A": "b"}}}}, "  raise:",
     "faults.raise is a command: headers and body apply to an endpoint", "use path:"),
    ({"replay": {"status": 409, "body": "summary"}}, "  body: summary",
     "'summary' is not allowed here", "write one of: original"),
    ({"race_digest": "md5"}, "race_digest:", "'md5' is not allowed here",
     "write one of: sha256-rfc8785, none"),
])
def test_a_wrong_new_field_names_the_line_and_the_fix(
        tmp_path: Path, fields: dict[str, Any], marker: str, problem: str, fix: str) -> None:
    path = tmp_path / "bad.yaml"
    text = yaml.safe_dump({**BASE, **fields}, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith(marker))
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    assert problem in caught.value.message, caught.value.message
    assert caught.value.line == line, (caught.value.line, text)
    assert fix in (caught.value.fix or "")


