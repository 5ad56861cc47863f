"""Transport honesty: a request the service never received is sent again, and said so.

A service may close a kept-alive connection at any moment between two requests — uvicorn does
right after a handler raised (Starlette's error middleware has already sent the 500 without
``Connection: close``). A request the client writes to that connection in the meantime never
reached the service: the client reads an immediate EOF (httpx ``RemoteProtocolError``: "Server
disconnected without sending a response") or a reset (``ReadError``/``WriteError``) before a
single byte of an answer. Recording that as "no answer" (an indeterminate ``info`` op) would turn
a client-side artefact into a verdict about the service.

:class:`ResendingTransport` wraps httpx's pooled transport and watches each request through
httpcore's ``trace`` hook. When a request fails that way **on a reused connection**, **before any
response header arrived**, and **replaying it can do no harm**, it is sent once more on a new
connection (a one-off transport, so no other stale pooled connection can be picked) and the
answer is the service's answer to it; :meth:`ResendingTransport.take_note` tells the caller it
happened, for the history. This is Go's ``net/http`` rule (``Transport`` retries a request on a
reused connection that failed before any response byte when the request is replayable: ``GET``,
``HEAD``, ``OPTIONS``, ``TRACE``, or one carrying an ``Idempotency-Key``). Anything else — a
timeout, a reset on a fresh connection, a failure after the answer started, a second failure, a
request without a key that replaying could repeat (an attempt's event) — propagates unchanged and
stays indeterminate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from harness.target.bounded import BoundedTransport
from harness.target.limits import Limits
from harness.tls import tls_for

#: failures meaning "the peer had closed this connection" when they come before any answer
CLOSED_BEFORE_ANSWER = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
_CONNECTED = "connection.connect_tcp.complete"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
KEY_HEADERS = ("idempotency-key", "x-idempotency-key")
_ANSWER_STARTED = ("http11.receive_response_headers.complete",
                   "http2.receive_response_headers.complete")


class ResendingTransport(httpx.BaseTransport):
    """httpx's pooled transport, re-sending once a request written to a connection the peer had
    already closed (see the module docstring). Thread-safe; notes are per thread."""

    def __init__(self, *, key_headers: tuple[str, ...] = (), **options: Any) -> None:
        """``key_headers``: more headers that make a request replayable (a profile's
        ``key_header``); ``options`` go to :class:`httpx.HTTPTransport`."""
        self._options = options
        self._pool = BoundedTransport(**options)  # a deadline and a body limit per request
        self._local = threading.local()
        self._keys = {*KEY_HEADERS, *(h.lower() for h in key_headers)}

    def replayable(self, request: httpx.Request) -> bool:
        """Sending ``request`` twice can do no harm: a safe method, or an idempotency key."""
        return request.method in SAFE_METHODS or any(h in request.headers for h in self._keys)

    def take_note(self) -> str:
        """Why this thread's last request was re-sent ('' if it was not); clears it."""
        note: str = getattr(self._local, "note", "")
        self._local.note = ""
        return note

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._local.note = ""
        events: list[str] = []
        previous: Callable[..., Any] | None = request.extensions.get("trace")

        def trace(name: str, info: dict[str, Any]) -> None:
            events.append(name)
            if previous is not None:
                previous(name, info)

        request.extensions = {**request.extensions, "trace": trace}
        try:
            return self._pool.handle_request(request)
        except CLOSED_BEFORE_ANSWER as exc:
            reused = _CONNECTED not in events
            if not reused or any(e in events for e in _ANSWER_STARTED) \
                    or not self.replayable(request):
                raise
            note = (f"{type(exc).__name__} on a reused keep-alive connection before any answer "
                    "(closed by the service): sent again on a new connection")
        request.extensions = {k: v for k, v in request.extensions.items() if k != "trace"}
        if previous is not None:
            request.extensions["trace"] = previous
        response = self._send_fresh(request)
        self._local.note = note
        return response

    def _send_fresh(self, request: httpx.Request) -> httpx.Response:
        """``request`` on a connection of its own; the whole answer read before it closes."""
        with BoundedTransport(**self._options) as fresh:
            response = fresh.handle_request(request)
            try:
                content = b"".join(response.iter_raw())  # still encoded, as the headers say
            finally:
                response.close()
        return httpx.Response(response.status_code, headers=response.headers, content=content,
                              extensions={k: v for k, v in response.extensions.items()
                                          if k != "network_stream"}, request=request)

    def close(self) -> None:
        self._pool.close()


def kept_alive(connections: int) -> httpx.Limits:
    """A pool of ``connections`` that never closes one under another thread's request: httpcore's
    pool (encode/httpcore#1110) may close a connection it has just handed to a waiting request,
    which then reads a closed socket (EBADF) or hangs to its deadline — as a surplus kept-alive
    one (so every connection may stay kept alive) and as one whose keep-alive expired meanwhile
    (so none expires by time; one the service closed is still dropped before it is used)."""
    return httpx.Limits(max_connections=connections, max_keepalive_connections=connections,
                        keepalive_expiry=None)


def resending_transport(base_url: str, *, max_connections: int = 200,
                        key_headers: tuple[str, ...] = (), bounds: Limits | None = None,
                        deadline_s: float = 30.0) -> ResendingTransport:
    """The transport the HTTP targets use for ``base_url`` (no CA bundle for plain http): each
    request within ``deadline_s`` (or ``bounds.deadline_s``), each body within
    ``bounds.body_bytes`` (:mod:`harness.target.bounded`)."""
    return ResendingTransport(key_headers=key_headers, limits=kept_alive(max_connections),
                              verify=tls_for(base_url),
                              bounds=bounds, deadline_s=deadline_s)
