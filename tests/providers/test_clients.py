"""The wire clients: request shapes per kind, respx routes, the sync wrapper, keys from env."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from harness.domain.errors import ConfigError, InputError
from harness.providers import (
    ProviderCallError,
    ProviderRequest,
    client_for,
    fake_routes,
)
from harness.providers.anthropic_messages import ANTHROPIC_VERSION
from tests._imported import Imported
from tests.providers.conftest import TICKET_SCHEMA, make_config

# respx: only these tests mock the transport, so only the worker running them imports it
respx: Any = Imported("respx")

OPENAI_URL = "https://api.openai.test/v1"
ANTHROPIC_URL = "https://api.anthropic.test"


def test_openai_body_puts_the_system_prompt_in_a_system_message(
        ticket_request: ProviderRequest, env: dict[str, str]) -> None:
    client = client_for(make_config("openai-chat", OPENAI_URL), env=env)
    body = client.build_request_body(ticket_request)
    assert body["messages"] == [
        {"role": "system", "content": ticket_request.system},
        {"role": "user", "content": ticket_request.user},
    ]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "ticket", "schema": TICKET_SCHEMA, "strict": True}}
    assert body["model"] == "gpt-test" and body["max_completion_tokens"] == 256
    assert "system" not in body
    assert client.url == f"{OPENAI_URL}/chat/completions"


def test_anthropic_body_puts_the_system_prompt_top_level_and_forces_the_tool(
        ticket_request: ProviderRequest, env: dict[str, str]) -> None:
    client = client_for(make_config("anthropic-messages", ANTHROPIC_URL), env=env)
    body = client.build_request_body(ticket_request)
    assert body["system"] == ticket_request.system
    assert body["messages"] == [{"role": "user", "content": ticket_request.user}]
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["max_tokens"] == 256
    assert body["tools"][0]["name"] == "ticket"
    assert body["tools"][0]["input_schema"] == TICKET_SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "ticket"}
    assert client.url == f"{ANTHROPIC_URL}/v1/messages"


def test_an_empty_system_prompt_is_left_out(env: dict[str, str]) -> None:
    req = ProviderRequest(system="", user="hi", schema=TICKET_SCHEMA)
    oai = client_for(make_config("openai-chat", OPENAI_URL), env=env)
    ant = client_for(make_config("anthropic-messages", ANTHROPIC_URL), env=env)
    assert [m["role"] for m in oai.build_request_body(req)["messages"]] == ["user"]
    assert "system" not in ant.build_request_body(req)


def test_request_validation() -> None:
    with pytest.raises(InputError, match="schema_name"):
        ProviderRequest(system="s", user="u", schema={}, schema_name="has spaces")
    with pytest.raises(InputError, match="JSON Schema object"):
        ProviderRequest(system="s", user="u", schema=[])  # type: ignore[arg-type]


def test_headers_on_the_wire(ticket_request: ProviderRequest, env: dict[str, str]) -> None:
    with respx.mock(assert_all_called=True) as router:
        fake_routes(router, "openai-chat", base_url=OPENAI_URL)
        client_for(make_config("openai-chat", OPENAI_URL), env=env).complete_sync(ticket_request)
        sent = router.calls.last.request
        ant_app = fake_routes(router, "anthropic-messages", base_url=ANTHROPIC_URL)
        client_for(make_config("anthropic-messages", ANTHROPIC_URL), env=env).complete_sync(
            ticket_request)
    assert sent.headers["authorization"] == f"Bearer {env['TEST_PROVIDER_KEY']}"
    assert "x-api-key" not in sent.headers
    (delivery,) = ant_app.deliveries.records()
    assert delivery.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert delivery.headers["x-api-key"] == "[REDACTED]"  # recorded, but never the key itself


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
def test_respx_routes_answer_in_process(kind: str, ticket_request: ProviderRequest,
                                        env: dict[str, str]) -> None:
    base = OPENAI_URL if kind == "openai-chat" else ANTHROPIC_URL
    with respx.mock(assert_all_called=True) as router:
        app = fake_routes(router, kind, base_url=base)
        client = client_for(make_config(kind, base), env=env)
        started = time.perf_counter()
        reply = client.complete_sync(ticket_request)
        wall = time.perf_counter() - started
    assert reply.parsed == {"category": "billing", "priority": 1, "needs_human": False,
                            "tags": []}
    assert reply.request_id and reply.request_id.startswith("req_")
    assert reply.usage.input_tokens and reply.usage.output_tokens
    assert reply.model == make_config(kind, base).model
    assert 0 < reply.latency_s <= wall  # the call's own time, measured inside the call
    assert app.deliveries.total == 1


def test_no_hidden_retries_on_429(ticket_request: ProviderRequest, env: dict[str, str]) -> None:
    with respx.mock() as router:
        app = fake_routes(router, "openai-chat", "status:429", base_url=OPENAI_URL)
        client = client_for(make_config("openai-chat", OPENAI_URL), env=env)
        with pytest.raises(ProviderCallError) as info:
            client.complete_sync(ticket_request)
    assert info.value.retry_after_s == 1.0  # surfaced, not slept on
    assert app.deliveries.total == 1


def test_async_client_reuses_its_connection_pool(ticket_request: ProviderRequest,
                                                 env: dict[str, str]) -> None:
    client = client_for(make_config("anthropic-messages", "fake://conformant"), env=env)

    async def main() -> list[str | None]:
        async with client:
            replies = await asyncio.gather(*(client.complete(ticket_request) for _ in range(5)))
        return [r.request_id for r in replies]

    ids = asyncio.run(main())
    assert len(set(ids)) == 5
    assert client.transport is not None
    assert client.transport.deliveries.snapshot()["max_per_request"] == 5  # same logical body
    assert client.complete_sync(ticket_request).parsed  # usable again from another event loop


def test_complete_sync_refuses_to_run_inside_an_event_loop(ticket_request: ProviderRequest,
                                                           env: dict[str, str]) -> None:
    client = client_for(make_config("openai-chat", "fake://conformant"), env=env)

    async def inside() -> None:
        client.complete_sync(ticket_request)

    with pytest.raises(RuntimeError, match="await complete"):
        asyncio.run(inside())


def test_a_missing_key_variable_is_a_config_error(ticket_request: ProviderRequest) -> None:
    with pytest.raises(ConfigError) as info:
        client_for(make_config("openai-chat", OPENAI_URL), env={})
    assert info.value.field == "providers.openai-chat-test.api_key_env"
    assert "export TEST_PROVIDER_KEY=" in (info.value.fix or "")


def test_fake_providers_need_no_key(ticket_request: ProviderRequest) -> None:
    client = client_for(make_config("openai-chat", "fake://conformant"), env={})
    assert client.complete_sync(ticket_request).parsed


def test_an_injected_transport_replaces_the_network(ticket_request: ProviderRequest,
                                                    env: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {
            "content": json.dumps({"category": "bug"}), "refusal": None},
            "finish_reason": "length"}]}, headers={"x-request-id": "req_1"})

    client = client_for(make_config("openai-chat", OPENAI_URL),
                        transport=httpx.MockTransport(handler), env=env)
    reply = client.complete_sync(ticket_request)
    assert (reply.parsed, reply.finish_reason, reply.request_id) == (
        {"category": "bug"}, "length", "req_1")
    assert reply.usage.input_tokens is None  # the provider reported no usage
    assert len(seen) == 1 and seen[0].extensions["timeout"]["read"] == 5
