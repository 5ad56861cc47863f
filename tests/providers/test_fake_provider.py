"""The fake providers themselves: answers, wire validation, delivery counting, the CLI server."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from harness.providers import (
    Behaviour,
    BehaviourError,
    FakeServer,
    ProviderRequest,
    client_for,
    load_answers,
    minimal_instance,
)
from harness.providers.fake_server import wait_until_ready
from harness.providers.fake_transport import fake_transport
from tests import _cli
from tests.providers.conftest import KINDS, TICKET_SCHEMA, make_config, sdk_base_url

SCHEMAS: list[dict[str, Any]] = [
    TICKET_SCHEMA,
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                      "id": {"type": "string", "format": "uuid"},
                                      "code": {"type": "string", "minLength": 3}},
     "required": ["when", "id", "code"]},
    {"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 2,
                                            "maximum": 10},
                                      "k": {"type": ["integer", "null"], "minimum": -5,
                                            "maximum": -1}},
     "required": ["n", "k"]},
    {"type": "object", "$defs": {"item": {"type": "object", "properties": {
        "sku": {"const": "X-1"}}, "required": ["sku"]}},
     "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"},
                              "minItems": 2},
                    "kind": {"anyOf": [{"type": "null"}, {"enum": ["a", "b"]}]}},
     "required": ["items", "kind"]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
               {"properties": {"b": {"type": "array", "prefixItems": [{"type": "string"}]}},
                "required": ["b"]}]},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_default_answer_is_a_valid_minimal_instance(schema: dict[str, Any]) -> None:
    value = minimal_instance(schema)
    jsonschema.validate(value, schema)
    assert minimal_instance(schema) == value  # deterministic


def test_behaviour_parsing() -> None:
    assert Behaviour.parse("slow:250").delay_s == 0.25
    assert Behaviour.parse("status:529").status == 529
    assert str(Behaviour.parse("slow:250")) == "slow:250"
    assert Behaviour.parse("hang").delay_s == float("inf")
    for bad in ("slow", "slow:fast", "status:200", "status:700", "conformant:1", "flaky", ""):
        with pytest.raises(BehaviourError):
            Behaviour.parse(bad)


def test_ignores_system_prompt_answers_as_if_no_system_prompt_was_sent(
        ticket_request: ProviderRequest) -> None:
    seen: list[str | None] = []

    def answer(system: str | None, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        seen.append(system)
        return {"category": "bug" if system else "other", "priority": 2, "needs_human": True,
                "tags": ["x"]}

    for kind in KINDS:
        for behaviour in ("conformant", "ignores-system-prompt"):
            client = client_for(make_config(kind, "fake://conformant"),
                                transport=fake_transport(kind, behaviour, answer))
            reply = client.complete_sync(ticket_request)
            assert reply.parsed is not None
            assert reply.parsed["category"] == ("other" if behaviour != "conformant" else "bug")
    assert seen == [ticket_request.system, None] * 2


def test_answers_file(tmp_path: Path, ticket_request: ProviderRequest) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text(
        "answers:\n"
        f"  - user: {json.dumps(ticket_request.user)}\n"
        "    system: null\n"
        "    answer: {category: other, priority: 4, needs_human: false, tags: []}\n"
        f"  - user: {json.dumps(ticket_request.user)}\n"
        "    answer: {category: billing, priority: 2, needs_human: false, tags: [refund]}\n"
    )
    answer = load_answers(path)
    assert answer("sys", ticket_request.user, TICKET_SCHEMA)["tags"] == ["refund"]
    assert answer(None, ticket_request.user, TICKET_SCHEMA)["category"] == "other"
    assert answer("sys", "unknown message", TICKET_SCHEMA)["priority"] == 1  # minimal instance
    bad = tmp_path / "bad.yaml"
    bad.write_text("answers:\n  - {user: hi}\n")
    with pytest.raises(Exception, match=r"answers\[0\]"):
        load_answers(bad)


def test_wire_validation_like_the_real_apis(serve: Callable[..., FakeServer]) -> None:
    ant = serve("anthropic-messages")
    oai = serve("openai-chat")
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client() as http:
        missing_key = http.post(f"{ant.url}/v1/messages", json=body)
        assert missing_key.status_code == 401
        assert missing_key.json()["error"]["type"] == "authentication_error"
        no_version = http.post(f"{ant.url}/v1/messages", json=body,
                               headers={"x-api-key": "k-123456"})
        assert no_version.status_code == 400 and "anthropic-version" in no_version.text
        headers = {"x-api-key": "k-123456", "anthropic-version": "2023-06-01"}
        no_max = http.post(f"{ant.url}/v1/messages", headers=headers,
                           json={k: v for k, v in body.items() if k != "max_tokens"})
        assert no_max.status_code == 400 and "max_tokens: Field required" in no_max.text
        ok = http.post(f"{ant.url}/v1/messages", json=body, headers=headers)
        assert ok.status_code == 200 and ok.json()["content"][0]["type"] == "text"
        assert ok.headers["request-id"].startswith("req_")
        no_auth = http.post(f"{oai.url}/v1/chat/completions",
                            json={"model": "m", "messages": []})
        assert no_auth.status_code == 401 and no_auth.json()["error"]["param"] is None
        no_messages = http.post(f"{oai.url}/v1/chat/completions", json={"model": "m"},
                                headers={"authorization": "Bearer k-123456"})
        assert no_messages.json()["error"]["code"] == "missing_required_parameter"
        wrong_path = http.post(f"{oai.url}/v1/responses", json={})
        assert wrong_path.status_code == 404 and "error" in wrong_path.json()
        bad_override = http.post(f"{oai.url}/v1/chat/completions", json={"model": "m"},
                                 headers={"x-fake-behaviour": "flaky"})
        assert bad_override.status_code == 400 and "unknown behaviour" in bad_override.text


def test_deliveries_are_counted_per_logical_request(serve: Callable[..., FakeServer],
                                                    env: dict[str, str]) -> None:
    server = serve("openai-chat")
    client = client_for(make_config("openai-chat", sdk_base_url("openai-chat", server.url)),
                        env=env)
    first = ProviderRequest(system="s", user="one", schema=TICKET_SCHEMA)
    second = ProviderRequest(system="s", user="two", schema=TICKET_SCHEMA)
    for req in (first, first, second):
        client.complete_sync(req)
    with httpx.Client() as http:
        counts = http.get(f"{server.url}/_fake/deliveries").json()
        assert counts["total"] == 3 and counts["max_per_request"] == 2
        assert sorted(counts["per_request"].values()) == [1, 2]
        http.post(f"{server.url}/_fake/reset")
        assert http.get(f"{server.url}/_fake/deliveries").json()["total"] == 0


@pytest.mark.parametrize(("kind", "stop_signal"), [("openai-chat", signal.SIGINT),
                                                   ("anthropic-messages", signal.SIGTERM)])
def test_the_cli_serves_a_fake_provider_on_loopback(kind: str, stop_signal: int, tmp_path: Path,
                                                    ticket_request: ProviderRequest) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"answers": [{"user": ticket_request.user, "answer": {
        "category": "bug", "priority": 3, "needs_human": False, "tags": ["cli"]}}]}))
    key_env = {"CLI_FAKE_KEY": "sk-cli-test-key-42"}
    proc = _cli.popen(
        ["fake-provider", "--kind", kind, "--port", "0",
         "--behaviour", "conformant", "--answers", str(answers),
         "--expect-api-key-env", "CLI_FAKE_KEY"], env={**os.environ, **key_env})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the socket listens
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        port = int(match.group(1))
        ready = wait_until_ready("127.0.0.1", port, alive=lambda: proc.poll() is None)
        assert ready["kind"] == kind
        base = sdk_base_url(kind, f"http://127.0.0.1:{port}")
        reply = client_for(make_config(kind, base, api_key_env="CLI_FAKE_KEY"),
                           env=key_env).complete_sync(ticket_request)
        assert reply.parsed == {"category": "bug", "priority": 3, "needs_human": False,
                                "tags": ["cli"]}
        with httpx.Client() as http:
            assert http.get(f"http://127.0.0.1:{port}/_fake/deliveries").json()["total"] == 1
    finally:
        proc.send_signal(stop_signal)  # Ctrl-C or a service manager: a clean stop either way
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "stopped after 1 delivery (1 request received)" in err
    assert "Traceback" not in err


def test_the_cli_rejects_a_taken_port_with_exit_2(serve: Callable[..., FakeServer]) -> None:
    server = serve("openai-chat")
    done = _cli.run(["fake-provider", "--kind", "openai-chat", "--port", str(server.port)],
                    timeout=60)
    assert done.returncode == 2
    assert "--port" in done.stderr and "fix:" in done.stderr
    assert "Traceback" not in done.stderr
