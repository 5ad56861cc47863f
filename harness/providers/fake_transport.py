"""In-process fake providers: an httpx transport (and respx routes) that behaves like a network.

:class:`FakeTransport` runs a :class:`~harness.providers.fake.FakeProvider` app in-process and
turns what the app does to the connection into what httpx would raise on a real socket: a delay
longer than the request's read timeout is ``httpx.ReadTimeout``; a reset is ``httpx.ReadError``;
a response cut short is ``httpx.RemoteProtocolError``. In virtual time (the default) delays cost
nothing: ``slow:30000`` with a 60 s read timeout answers at once, ``hang`` with a 5 s timeout
times out at once; the delivery is still counted, exactly as on a socket.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import httpx

from harness.providers.anthropic_messages import AnthropicMessagesClient
from harness.providers.behaviours import Behaviour
from harness.providers.fake import NETWORK_EXTENSION, DeliveryLog, FakeProvider
from harness.providers.fake_answers import AnswerFn
from harness.providers.openai_chat import OpenAIChatClient

# base_url a client_for(fake://…) client uses; any host works, nothing leaves the process.
FAKE_BASE_URLS = {
    "openai-chat": "http://fake-provider.invalid/v1",
    "anthropic-messages": "http://fake-provider.invalid",
}
ENDPOINTS = {
    "openai-chat": OpenAIChatClient.endpoint,
    "anthropic-messages": AnthropicMessagesClient.endpoint,
}


class _Connection:
    """One emulated connection: its clock and whether it was dropped."""

    def __init__(self, read_timeout: float | None, *, virtual_time: bool) -> None:
        self.read_timeout = read_timeout
        self.virtual_time = virtual_time
        self.timed_out = False
        self.dropped: str | None = None  # "reset" or "closed"
        self.gone = asyncio.Event()

    async def elapse(self, seconds: float) -> bool:
        limit = self.read_timeout
        if limit is not None and seconds > limit:
            if not self.virtual_time:
                await asyncio.sleep(limit)  # real-time mode: the client waits its timeout out
            self.timed_out = True
            self.gone.set()
            return False
        if math.isinf(seconds):  # no read timeout: a hang is a hang
            await self.gone.wait()
            return False
        if not self.virtual_time:
            await asyncio.sleep(seconds)
        return True

    def drop(self, *, reset: bool) -> None:
        self.dropped = "reset" if reset else "closed"
        self.gone.set()


class FakeTransport(httpx.AsyncBaseTransport):
    """An httpx transport that delivers each request to a fake provider app, in-process."""

    def __init__(self, app: FakeProvider, *, virtual_time: bool = True) -> None:
        self.app = app
        self.virtual_time = virtual_time

    @property
    def deliveries(self) -> DeliveryLog:
        return self.app.deliveries

    def __repr__(self) -> str:
        return f"FakeTransport({self.app!r})"

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        timeout = request.extensions.get("timeout") or {}
        conn = _Connection(timeout.get("read"), virtual_time=self.virtual_time)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (request.url.host, request.url.port or 80),
            "client": ("127.0.0.1", 50000),
            "extensions": {NETWORK_EXTENSION: conn},
        }
        state: dict[str, Any] = {"status": None, "headers": [], "chunks": [], "complete": False,
                                 "body_sent": False}

        async def receive() -> dict[str, Any]:
            if not state["body_sent"]:
                state["body_sent"] = True
                return {"type": "http.request", "body": body, "more_body": False}
            await conn.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                state["status"], state["headers"] = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                state["chunks"].append(message.get("body", b""))
                if not message.get("more_body"):
                    state["complete"] = True
                    conn.gone.set()

        await self.app(scope, receive, send)
        received = b"".join(state["chunks"])
        if conn.timed_out:
            raise httpx.ReadTimeout("timed out", request=request)
        if conn.dropped == "reset":
            raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
        if state["status"] is None:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.",
                                            request=request)
        if not state["complete"]:
            expected = dict(state["headers"]).get(b"content-length", b"?").decode()
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body: "
                f"received {len(received)} bytes, expected {expected}", request=request)
        return httpx.Response(state["status"], headers=state["headers"], content=received,
                              request=request)


def fake_transport(kind: str, behaviour: str | Behaviour = "conformant",
                   answer: AnswerFn | None = None, *, expected_api_key: str | None = None,
                   virtual_time: bool = True, answers_from: str | None = None) -> FakeTransport:
    """A transport to a fresh fake provider of ``kind`` with ``behaviour`` (deliveries on it)."""
    app = FakeProvider(kind, behaviour, answer, expected_api_key=expected_api_key,
                       answers_from=answers_from)
    return FakeTransport(app, virtual_time=virtual_time)


def fake_routes(router: Any, kind: str, behaviour: str | Behaviour = "conformant",
                answer: AnswerFn | None = None, *, base_url: str,
                expected_api_key: str | None = None) -> FakeProvider:
    """Add a respx route answering ``POST {base_url}{endpoint}`` with a fake provider.

    ``router`` is a ``respx.MockRouter`` (``with respx.mock() as router``). Returns the app, whose
    ``deliveries`` count the calls.
    """
    transport = fake_transport(kind, behaviour, answer, expected_api_key=expected_api_key)
    router.post(base_url.rstrip("/") + ENDPOINTS[kind]).mock(
        side_effect=transport.handle_async_request)
    return transport.app
