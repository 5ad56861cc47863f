"""The official ``openai`` and ``anthropic`` SDKs, pointed at the fake providers on loopback.

If the fakes were not faithful to the wire formats, the SDKs would fail to parse the replies or
would map the errors to the wrong exception classes. Every SDK client has ``max_retries=0``: one
SDK call must be exactly one delivery.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.providers import FakeProvider, FakeServer
from tests._imported import Imported
from tests._servers import tls
from tests.providers.conftest import TICKET_SCHEMA

# the `test` extra's SDKs (~1.8 s of CPU): imported on the one worker that runs these tests
anthropic: Any = Imported("anthropic")
openai: Any = Imported("openai")
pytestmark = pytest.mark.one_worker("sdk-fidelity")

SYSTEM = "You triage support tickets. Answer with JSON only."
USER = "Subject: refund\n\nI was charged twice."
KEY = "sk-sdk-test-key-000000"


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeServer]:
    with FakeServer(FakeProvider("openai-chat", expected_api_key=KEY)) as server:
        yield server


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeServer]:
    with FakeServer(FakeProvider("anthropic-messages", expected_api_key=KEY)) as server:
        yield server


#: how long an SDK waits for an answer the fake gives (bounds a hang only: a loaded machine once
#: took over 0.5 s to answer a 429); the ``hang`` behaviour never answers, so its call is ended
#: by the SDK's own timeout, HANG_TIMEOUT_S
ANSWER_TIMEOUT_S = 30.0
HANG_TIMEOUT_S = 0.5


@pytest.fixture
def oai(openai_server: FakeServer) -> Iterator[openai.OpenAI]:
    openai_server.app.deliveries.clear()
    client = openai.OpenAI(api_key=KEY, base_url=f"{openai_server.url}/v1", max_retries=0,
                           timeout=ANSWER_TIMEOUT_S,
                           http_client=openai.DefaultHttpxClient(verify=tls()))
    yield client
    client.close()


@pytest.fixture
def ant(anthropic_server: FakeServer) -> Iterator[anthropic.Anthropic]:
    anthropic_server.app.deliveries.clear()
    client = anthropic.Anthropic(api_key=KEY, base_url=anthropic_server.url, max_retries=0,
                                 timeout=ANSWER_TIMEOUT_S,
                                 http_client=anthropic.DefaultHttpxClient(verify=tls()))
    yield client
    client.close()


def openai_call(client: openai.OpenAI, behaviour: str = "conformant") -> Any:
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "ticket", "schema": TICKET_SCHEMA,
                                         "strict": True}},
        extra_headers={"x-fake-behaviour": behaviour},
    )


def anthropic_call(client: anthropic.Anthropic, behaviour: str = "conformant") -> Any:
    return client.messages.create(
        model="claude-3-5-haiku-latest",
        max_tokens=256,
        system=SYSTEM,
        messages=[{"role": "user", "content": USER}],
        tools=[{"name": "ticket", "input_schema": TICKET_SCHEMA}],
        tool_choice={"type": "tool", "name": "ticket"},
        extra_headers={"x-fake-behaviour": behaviour},
    )


EXPECTED_ANSWER = {"category": "billing", "priority": 1, "needs_human": False, "tags": []}


# -- conformant replies parse --------------------------------------------------------------------

def test_openai_sdk_parses_a_conformant_reply(oai: openai.OpenAI,
                                              openai_server: FakeServer) -> None:
    completion = openai_call(oai)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.refusal is None
    assert json.loads(choice.message.content) == EXPECTED_ANSWER
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion._request_id and completion._request_id.startswith("req_")
    assert openai_server.app.deliveries.total == 1


def test_openai_sdk_structured_parse_helper(oai: openai.OpenAI) -> None:
    from pydantic import BaseModel

    class Ticket(BaseModel):
        category: str
        priority: int
        needs_human: bool

    completion = oai.chat.completions.parse(
        model="gpt-4o-mini", messages=[{"role": "user", "content": USER}],
        response_format=Ticket)
    assert completion.choices[0].message.parsed == Ticket(category="a", priority=0,
                                                          needs_human=False)


def test_openai_sdk_sees_a_refusal(oai: openai.OpenAI) -> None:
    message = openai_call(oai, "refusal").choices[0].message
    assert message.content is None
    assert message.refusal and "can't help" in message.refusal


def test_anthropic_sdk_parses_a_conformant_reply(ant: anthropic.Anthropic,
                                                 anthropic_server: FakeServer) -> None:
    message = anthropic_call(ant)
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "ticket"
    assert block.input == EXPECTED_ANSWER
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message._request_id and message._request_id.startswith("req_")
    assert anthropic_server.app.deliveries.total == 1


def test_anthropic_sdk_sees_a_refusal_and_prose(ant: anthropic.Anthropic) -> None:
    refused = anthropic_call(ant, "refusal")
    assert refused.stop_reason == "refusal"
    prose = anthropic_call(ant, "prose")
    assert prose.stop_reason == "end_turn" and prose.content[0].type == "text"


# -- errors map to each SDK's own exception classes --------------------------------------------

OPENAI_ERRORS = {
    "status:400": "BadRequestError",
    "status:401": "AuthenticationError",
    "status:404": "NotFoundError",
    "status:429": "RateLimitError",
    "status:500": "InternalServerError",
    "status:503": "InternalServerError",
    "status:504": "InternalServerError",
    "status:529": "InternalServerError",
    "hang": "APITimeoutError",
    "reset-after-send": "APIConnectionError",
    "truncated": "APIConnectionError",
}

ANTHROPIC_ERRORS = {
    "status:400": "BadRequestError",
    "status:401": "AuthenticationError",
    "status:404": "NotFoundError",
    "status:429": "RateLimitError",
    "status:500": "InternalServerError",
    "status:503": "ServiceUnavailableError",
    "status:504": "GatewayTimeoutError",
    "status:529": "OverloadedError",
    "hang": "APITimeoutError",
    "reset-after-send": "APIConnectionError",
    "truncated": "APIConnectionError",
}


@pytest.mark.parametrize(("behaviour", "error"), list(OPENAI_ERRORS.items()))
def test_openai_sdk_maps_errors(oai: openai.OpenAI, openai_server: FakeServer, behaviour: str,
                                error: str) -> None:
    client = oai.with_options(timeout=HANG_TIMEOUT_S) if behaviour == "hang" else oai
    with pytest.raises(getattr(openai, error)) as info:
        openai_call(client, behaviour)
    if behaviour not in ("hang",):
        assert not isinstance(info.value, openai.APITimeoutError)
    if isinstance(info.value, openai.APIStatusError):
        assert info.value.status_code == int(behaviour.split(":")[1])
        assert info.value.request_id and info.value.request_id.startswith("req_")
    assert openai_server.app.deliveries.total == 1


@pytest.mark.parametrize(("behaviour", "error"), list(ANTHROPIC_ERRORS.items()))
def test_anthropic_sdk_maps_errors(ant: anthropic.Anthropic, anthropic_server: FakeServer,
                                   behaviour: str, error: str) -> None:
    client = ant.with_options(timeout=HANG_TIMEOUT_S) if behaviour == "hang" else ant
    with pytest.raises(getattr(anthropic, error)) as info:
        anthropic_call(client, behaviour)
    if behaviour != "hang":
        assert not isinstance(info.value, anthropic.APITimeoutError)
    if isinstance(info.value, anthropic.APIStatusError):
        assert info.value.status_code == int(behaviour.split(":")[1])
        assert info.value.request_id and info.value.request_id.startswith("req_")
        assert info.value.body["type"] == "error"
    assert anthropic_server.app.deliveries.total == 1


def test_anthropic_sdk_overloaded_body(ant: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.OverloadedError) as info:
        anthropic_call(ant, "status:529")
    assert info.value.body["error"]["type"] == "overloaded_error"
    assert info.value.response.headers["retry-after"] == "1"


def test_anthropic_rejects_a_system_role_message_as_the_real_api_does(
        ant: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError, match="top-level `system` parameter"):
        ant.messages.create(model="claude-3-5-haiku-latest", max_tokens=64,
                            messages=[{"role": "system", "content": SYSTEM},  # type: ignore[list-item]
                                      {"role": "user", "content": USER}])


def test_a_wrong_key_is_an_authentication_error_in_both_sdks(
        openai_server: FakeServer, anthropic_server: FakeServer) -> None:
    with openai.OpenAI(api_key="sk-wrong-key-123", base_url=f"{openai_server.url}/v1",
                       max_retries=0) as client, pytest.raises(openai.AuthenticationError):
        openai_call(client)
    wrong = anthropic.Anthropic(api_key="sk-wrong-key-123", base_url=anthropic_server.url,
                                max_retries=0)
    with wrong, pytest.raises(anthropic.AuthenticationError):
        anthropic_call(wrong)


def test_delivery_counting_exposes_sdk_retries(openai_server: FakeServer) -> None:
    # Why max_retries=0 matters: with one SDK retry, one call is two deliveries.
    openai_server.app.deliveries.clear()
    with openai.OpenAI(api_key=KEY, base_url=f"{openai_server.url}/v1", max_retries=1,
                       timeout=ANSWER_TIMEOUT_S) as client, \
            pytest.raises(openai.InternalServerError):
        openai_call(client, "status:500")
    assert openai_server.app.deliveries.snapshot()["max_per_request"] == 2
