"""Transport honesty against real servers: a request written to a kept-alive connection the
service had already closed is sent again on a new connection and recorded so; an answer that is
genuinely missing stays indeterminate.

The service under test is what FastAPI/Starlette users run: a handler that raises, Starlette's
error middleware answering 500 (without ``Connection: close``) and re-raising, an error reporter
that works a little, then uvicorn closing the connection. A client that sends its next request
in the meantime writes it to a connection the server is closing: it never reaches the handler.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.providers.fake_server import bind_socket
from harness.scenarios.targets.transport import ResendingTransport, resending_transport
from tests.detection.conftest import example

REPORT_MS = 400  # the error reporter's work: wide, so the next request meets it even under load


def crashing_app(seen: list[str]) -> Any:
    """``POST /boom`` raises; ``/ok`` answers. After a crash, the server closes the connection
    ``REPORT_MS`` later (the error is reported first); a request written to that connection in
    the meantime is held until the close and never reaches a handler — the race a client meets
    now and then, made to happen every time."""
    async def boom(request: Request) -> Response:
        seen.append("boom")
        raise RuntimeError("the handler raised")

    async def ok(request: Request) -> Response:
        seen.append(request.method)
        return JSONResponse({"ok": True})

    inner = Starlette(routes=[Route("/boom", boom, methods=["POST"]),
                              Route("/ok", ok, methods=["POST", "GET"])])
    # the example services' stack: Starlette's error middleware, an error reporter, uvicorn
    return example("jobs_app").served(inner, report_ms=REPORT_MS)


class Server:
    """uvicorn (h11) on a loopback socket, in a thread."""

    def __init__(self, app: Any) -> None:
        self.sock = bind_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, http="h11", log_level="critical", access_log=False,
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)
        self.thread.start()
        with httpx.Client(timeout=2.0) as probe:
            while True:  # ready when it answers (the socket listens already)
                try:
                    probe.get(f"{self.url}/ok")
                    break
                except httpx.TransportError:
                    continue

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture
def crashing() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    server = Server(crashing_app(seen))
    seen.clear()
    yield server.url, seen
    server.stop()


def test_without_resending_the_next_request_is_lost_on_the_closed_connection(
        crashing: tuple[str, list[str]]) -> None:
    url, seen = crashing
    with httpx.Client(base_url=url, timeout=5.0) as client:
        assert client.post("/boom").status_code == 500
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            client.post("/ok", content=b"{}")
    assert seen == ["boom"]  # the service never saw the second request


def test_a_request_the_closed_connection_swallowed_is_sent_again_and_said_so(
        crashing: tuple[str, list[str]]) -> None:
    url, seen = crashing
    transport = resending_transport(url)
    with httpx.Client(base_url=url, timeout=5.0, transport=transport) as client:
        assert client.post("/boom").status_code == 500
        assert transport.take_note() == ""
        answer = client.post("/ok", content=b"{}", headers={"Idempotency-Key": "k-1"})
        note = transport.take_note()
        assert answer.status_code == 200 and answer.json() == {"ok": True}
        assert "on a reused keep-alive connection before any answer" in note
        assert "sent again on a new connection" in note
        assert transport.take_note() == ""  # a note is taken once
        assert client.get("/ok").status_code == 200 and transport.take_note() == ""
    assert seen == ["boom", "POST", "GET"]  # the re-sent request ran exactly once


def test_a_request_without_a_key_is_not_replayed(crashing: tuple[str, list[str]]) -> None:
    url, seen = crashing
    transport = resending_transport(url)
    with httpx.Client(base_url=url, timeout=5.0, transport=transport) as client:
        assert client.post("/boom").status_code == 500
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            client.post("/ok", content=b"{}")  # an event: replaying it could repeat it
        assert transport.take_note() == ""
    assert seen == ["boom"]


def _silent_server() -> tuple[socket.socket, str, threading.Thread, list[int]]:
    """Accepts connections, reads each request whole, closes without answering (a service that
    died with the request in hand). Counts the connections, so that a re-send is seen."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(2.0)
    connections: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener timed out (no second connection) or was closed
                return
            connections.append(1)
            with conn:
                conn.settimeout(5.0)
                data = b""
                # read the whole request (headers and the 2-byte body), so that closing does not
                # reset the connection over unread bytes; either way the client has no answer
                while not data.endswith(b"\r\n\r\n{}"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}", thread, connections


def test_a_missing_answer_on_a_fresh_connection_is_not_re_sent() -> None:
    listener, url, thread, connections = _silent_server()
    transport = ResendingTransport()
    try:
        with httpx.Client(base_url=url, timeout=5.0, transport=transport) as client, \
                pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            client.post("/jobs", content=b"{}")
        assert transport.take_note() == ""
    finally:
        thread.join(timeout=10)
        listener.close()
    assert connections == [1]  # the request went out once: no second connection came


def test_a_timeout_stays_a_timeout() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    transport = ResendingTransport()
    try:
        with httpx.Client(base_url=url, timeout=0.3, transport=transport) as client, \
                pytest.raises(httpx.ReadTimeout):
            client.get("/slow")
        assert transport.take_note() == ""
    finally:
        thread.join(timeout=10)
        for conn in accepted:
            conn.close()
        listener.close()
