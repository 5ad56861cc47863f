"""Every behaviour × every wire format → the right outcome, in-process and on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import httpx
import jsonschema
import pytest

from harness.providers import (
    FakeServer,
    FakeTransport,
    ProviderCallError,
    ProviderClient,
    ProviderRequest,
    classify_status,
    classify_transport_error,
    client_for,
)
from harness.providers.classify import retry_after_seconds
from tests.providers.conftest import KINDS, make_config, sdk_base_url

# behaviour -> expected outcome. "valid": a reply whose parsed object meets the schema;
# "invalid": a reply, but parsed is not a schema-valid object; "refusal": a reply with a refusal.
EXPECTED = {
    "conformant": "valid",
    "ignores-system-prompt": "valid",
    "slow:40000": "valid",  # 40 s of virtual latency is under a 60 s read timeout
    "hallucinated-key": "invalid",
    "fenced-json": "invalid",
    "prose": "invalid",
    "wrong-types": "invalid",
    "refusal": "refusal",
    "hang": "unknown",
    "slow:90000": "unknown",  # longer than the read timeout: a read timeout
    "reset-after-send": "unknown",
    "truncated": "unknown",
    "status:504": "unknown",
    "status:400": "failed",
    "status:401": "failed",
    "status:404": "failed",
    "status:408": "failed",
    "status:429": "failed",
    "status:500": "failed",
    "status:502": "failed",
    "status:503": "failed",
    "status:529": "failed",
}


def outcome_of(client: ProviderClient, req: ProviderRequest) -> tuple[str, object]:
    """valid / invalid / refusal for a reply; failed / unknown for an error."""
    try:
        reply = client.complete_sync(req)
    except ProviderCallError as exc:
        return exc.classification, exc
    if reply.refusal:
        return "refusal", reply
    if reply.parsed is not None and jsonschema.Draft202012Validator(req.schema).is_valid(
            reply.parsed):
        return "valid", reply
    return "invalid", reply


def client(kind: str, base_url: str, env: dict[str, str], read: float = 60) -> ProviderClient:
    return client_for(make_config(kind, base_url, timeout={"connect": 2, "read": read}), env=env)


@pytest.mark.parametrize("behaviour", list(EXPECTED))
@pytest.mark.parametrize("kind", KINDS)
def test_each_behaviour_in_each_wire_format_is_classified(
    kind: str, behaviour: str, ticket_request: ProviderRequest, env: dict[str, str]
) -> None:
    fake = client(kind, f"fake://{behaviour}", env)
    got, detail = outcome_of(fake, ticket_request)
    assert got == EXPECTED[behaviour], detail
    assert isinstance(fake.transport, FakeTransport)
    assert fake.transport.deliveries.total == 1  # one call, one delivery: no hidden retries


@pytest.mark.parametrize("kind", KINDS)
def test_error_details_are_surfaced(kind: str, ticket_request: ProviderRequest,
                                    env: dict[str, str]) -> None:
    _, err = outcome_of(client(kind, "fake://status:429", env), ticket_request)
    assert isinstance(err, ProviderCallError)
    assert err.status == 429
    assert err.retry_after_s == 1.0
    assert err.code == ("rate_limit_exceeded" if kind == "openai-chat" else "rate_limit_error")
    assert err.request_id and err.request_id.startswith("req_")
    assert err.to_error()["classification"] == "failed"
    _, overloaded = outcome_of(client(kind, "fake://status:529", env), ticket_request)
    assert isinstance(overloaded, ProviderCallError)
    if kind == "anthropic-messages":
        assert overloaded.code == "overloaded_error"


# -- the same behaviours over real loopback sockets (real time: short read timeout) -------------

LOOPBACK = {
    "conformant": "valid",
    "slow:50": "valid",
    "hang": "unknown",
    "reset-after-send": "unknown",
    "truncated": "unknown",
    "status:504": "unknown",
    "status:529": "failed",
    "status:429": "failed",
}


@pytest.mark.parametrize("behaviour", list(LOOPBACK))
@pytest.mark.parametrize("kind", KINDS)
def test_behaviours_over_loopback(kind: str, behaviour: str, ticket_request: ProviderRequest,
                                  env: dict[str, str],
                                  serve: Callable[..., FakeServer]) -> None:
    server = serve(kind, behaviour)
    got, detail = outcome_of(client(kind, sdk_base_url(kind, server.url), env, read=0.5),
                             ticket_request)
    assert got == LOOPBACK[behaviour], detail
    assert server.app.deliveries.total == 1
    if behaviour == "reset-after-send":
        assert isinstance(detail, ProviderCallError) and detail.cause == "connection_reset"
    if behaviour == "truncated":
        assert isinstance(detail, ProviderCallError) and detail.cause == "connection_closed"


def test_a_refused_connection_is_failed(ticket_request: ProviderRequest,
                                        env: dict[str, str]) -> None:
    # A port that was free a moment ago and has nobody listening: the request never left.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    got, err = outcome_of(client("openai-chat", f"http://127.0.0.1:{port}/v1", env),
                          ticket_request)
    assert got == "failed"
    assert isinstance(err, ProviderCallError) and err.cause == "connect_error"


# -- the classification rules themselves -------------------------------------------------------

@pytest.mark.parametrize(("status", "expected"), [
    (400, "failed"), (401, "failed"), (403, "failed"), (404, "failed"), (408, "failed"),
    (409, "failed"), (413, "failed"), (422, "failed"), (429, "failed"), (500, "failed"),
    (502, "failed"), (503, "failed"), (504, "unknown"), (529, "failed"),
])
def test_status_classification(status: int, expected: str) -> None:
    assert classify_status(status) == expected


def test_a_success_status_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="not an error"):
        classify_status(200)


REQ = httpx.Request("POST", "https://provider.test/v1/chat/completions")


@pytest.mark.parametrize(("error", "expected"), [
    (httpx.ConnectError("refused", request=REQ), ("failed", "connect_error")),
    (httpx.ConnectTimeout("slow dns", request=REQ), ("failed", "connect_timeout")),
    (httpx.PoolTimeout("pool", request=REQ), ("failed", "pool_timeout")),
    (httpx.ReadTimeout("read", request=REQ), ("unknown", "read_timeout")),
    (httpx.WriteTimeout("write", request=REQ), ("unknown", "write_timeout")),
    (httpx.ReadError("reset", request=REQ), ("unknown", "connection_reset")),
    (httpx.RemoteProtocolError("closed", request=REQ), ("unknown", "connection_closed")),
    (httpx.WriteError("broken pipe", request=REQ), ("unknown", "write_error")),
    (RuntimeError("something else in flight"), ("unknown", "transport_error")),
])
def test_transport_error_classification(error: Exception, expected: tuple[str, str]) -> None:
    assert classify_transport_error(error) == expected


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30.0),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "-1"}, None),
    ({}, None),
])
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    now = 1767225600.0  # 2026-01-01T00:00:00Z
    assert retry_after_seconds(httpx.Headers(headers), now=now) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_2xx_body_that_is_not_a_reply_is_unknown(kind: str, ticket_request: ProviderRequest,
                                                   env: dict[str, str]) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>proxy</html>"))
    client = client_for(make_config(kind, "https://provider.test"), transport=transport, env=env)
    with pytest.raises(ProviderCallError) as info:
        asyncio.run(client.complete(ticket_request))
    assert info.value.classification == "unknown"
    assert info.value.code == "invalid_response"


def test_an_error_body_that_is_not_json_still_names_the_status(
        ticket_request: ProviderRequest, env: dict[str, str]) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(502, text="Bad Gateway"))
    client = client_for(make_config("openai-chat", "https://provider.test/v1"),
                        transport=transport, env=env)
    with pytest.raises(ProviderCallError) as info:
        client.complete_sync(ticket_request)
    assert (info.value.classification, info.value.status, info.value.code) == (
        "failed", 502, "http_502")
    assert "Bad Gateway" in info.value.message


@pytest.mark.parametrize(("body", "expected"), [
    ({"error": {"message": "upstream failed", "type": "None", "code": "500"}},
     "HTTP 500: upstream failed"),
    ({"error": {"message": "upstream failed", "code": "server_error"}},
     "HTTP 500 server_error: upstream failed"),
])
def test_an_error_code_that_repeats_the_status_is_said_once(
        body: dict[str, object], expected: str, ticket_request: ProviderRequest,
        env: dict[str, str]) -> None:
    # LiteLLM's proxy answers {"error": {..., "code": "500"}}: the message said "HTTP 500 500".
    transport = httpx.MockTransport(lambda request: httpx.Response(500, json=body))
    client = client_for(make_config("openai-chat", "https://provider.test/v1"),
                        transport=transport, env=env)
    with pytest.raises(ProviderCallError) as info:
        client.complete_sync(ticket_request)
    assert f"openai-chat-test: {expected} [" in info.value.message
