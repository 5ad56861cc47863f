"""Fake LLM providers: an ASGI app per wire format that answers with a chosen behaviour.

``FakeProvider(kind, behaviour, answer)`` serves ``POST /v1/chat/completions`` (openai-chat) or
``POST /v1/messages`` (anthropic-messages), faithful to the wire format (see
:mod:`harness.providers.fake_wire`), and counts every delivery per logical request (the SHA-256
of the canonical request body) so tests can prove one provider call per attempt. Behaviours are
listed in :mod:`harness.providers.behaviours`; a request may override the app's behaviour with
the header ``x-fake-behaviour``.

The same app runs in-process (:func:`harness.providers.fake_transport.fake_transport`, virtual
time) and on a loopback socket (:class:`harness.providers.fake_server.FakeServer`, real time).
Control endpoints: ``GET /_fake/health``, ``GET /_fake/deliveries``, ``POST /_fake/reset``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import math
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.domain.fingerprint import canonical_json
from harness.providers.behaviours import Behaviour, BehaviourError
from harness.providers.fake_answers import (
    AnswerFn,
    fenced,
    minimal_answer,
    prose,
    with_hallucinated_key,
    with_wrong_types,
)
from harness.providers.fake_wire import RETRY_AFTER_STATUSES, WIRES, CallInput, Content, WireError
from harness.providers.secrets import redact_headers

# scope["extensions"] key under which an in-process transport offers its emulated network.
NETWORK_EXTENSION = "harness.fake.network"
BEHAVIOUR_HEADER = "x-fake-behaviour"
ANSWERS_HEADER = "x-fake-answers"  # where a fake's answers come from ("golden <contract>")
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


class EmulatedNetwork(Protocol):
    """What an in-process transport offers the app instead of a socket (virtual time)."""

    async def elapse(self, seconds: float) -> bool:
        """Let ``seconds`` pass; False if the client's read timeout expired first."""
        ...

    def drop(self, *, reset: bool) -> None:
        """Close the connection (``reset``: abortively, before any response byte)."""
        ...


@dataclass(frozen=True, slots=True)
class Delivery:
    """One request that reached the fake provider."""

    seq: int
    key: str
    path: str
    behaviour: str
    headers: dict[str, str]  # credentials masked


class DeliveryLog:
    """Deliveries per logical request (thread-safe: the loopback server runs in a thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Delivery] = []
        self._per_key: Counter[str] = Counter()

    def record(self, path: str, body: bytes, headers: dict[str, str], behaviour: str) -> Delivery:
        key = request_key(body)
        with self._lock:
            delivery = Delivery(len(self._records) + 1, key, path, behaviour,
                                redact_headers(headers))
            self._records.append(delivery)
            self._per_key[key] += 1
        return delivery

    @property
    def total(self) -> int:
        with self._lock:
            return len(self._records)

    def count(self, key: str) -> int:
        """Deliveries of the logical request ``key`` (see :func:`request_key`)."""
        with self._lock:
            return self._per_key[key]

    def per_request(self) -> dict[str, int]:
        with self._lock:
            return dict(self._per_key)

    def records(self) -> list[Delivery]:
        with self._lock:
            return list(self._records)

    def snapshot(self) -> dict[str, Any]:
        per = self.per_request()
        return {"total": sum(per.values()), "per_request": per,
                "max_per_request": max(per.values(), default=0)}

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._per_key.clear()


def request_key(body: bytes) -> str:
    """The logical request a body belongs to: SHA-256 of its canonical JSON (else of its bytes)."""
    try:
        return hashlib.sha256(canonical_json(json.loads(body))).hexdigest()
    except Exception:
        return hashlib.sha256(body).hexdigest()


class FakeProvider:
    """An ASGI app speaking ``kind``'s wire format with ``behaviour`` (see module docstring).

    ``answer(system, user, schema) -> dict`` decides the conformant answer (default: a minimal
    instance of the schema); ``expected_api_key``, if set, makes a wrong key a 401 that echoes
    the presented key (a worst-case provider, to test redaction).
    """

    def __init__(self, kind: str, behaviour: str | Behaviour = "conformant",
                 answer: AnswerFn | None = None, *, expected_api_key: str | None = None,
                 answers_from: str | None = None) -> None:
        if kind not in WIRES:
            raise ValueError(f"kind must be one of {sorted(WIRES)}, not {kind!r}")
        self.kind = kind
        self.wire = WIRES[kind]
        self.behaviour = (behaviour if isinstance(behaviour, Behaviour)
                          else Behaviour.parse(behaviour))
        self.answer: AnswerFn = answer or minimal_answer
        self.expected_api_key = expected_api_key
        # Said on every reply (``x-fake-answers``) so a certification can never pass this fake
        # off as evidence about a model: e.g. "golden ticket_triage" for --answers-from.
        self.answers_from = answers_from
        self.deliveries = DeliveryLog()

    def __repr__(self) -> str:
        return f"FakeProvider({self.kind!r}, {str(self.behaviour)!r})"

    def behaviour_for(self, headers: dict[str, str]) -> Behaviour:
        """The request's behaviour: its ``x-fake-behaviour`` header, else the app's."""
        override = headers.get(BEHAVIOUR_HEADER)
        return Behaviour.parse(override) if override else self.behaviour

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        body = await _read_body(receive)
        if path == "/_fake/health" and method == "GET":
            await _send_json(send, 200, {"status": "ok", "kind": self.kind,
                                         "behaviour": str(self.behaviour)})
        elif path == "/_fake/deliveries" and method == "GET":
            await _send_json(send, 200, self.deliveries.snapshot())
        elif path == "/_fake/reset" and method == "POST":
            self.deliveries.clear()
            await _send_json(send, 200, {"status": "reset"})
        elif path == self.wire.path and method == "POST":
            await self._call(scope, receive, send, body)
        else:
            await _send_json(send, 404, self.wire.error(
                WireError(404, f"Unknown request URL: {method} {path}.", type_="not_found_error"),
                "req_fake_none"))

    async def _call(self, scope: dict[str, Any], receive: Any, send: Any, body: bytes) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            behaviour = self.behaviour_for(headers)
        except BehaviourError as exc:
            delivery = self.deliveries.record(scope["path"], body, headers, "invalid")
            await self._error(send, WireError(400, f"{BEHAVIOUR_HEADER}: {exc}"), delivery)
            return
        delivery = self.deliveries.record(scope["path"], body, headers, str(behaviour))
        if behaviour.delay_s and not await _elapse(scope, receive, behaviour.delay_s):
            return  # the client gave up (timeout) or went away: nothing more is sent
        try:
            call = self.wire.parse(headers, body, self.expected_api_key)
        except WireError as err:
            await self._error(send, err, delivery)
            return
        if behaviour.name == "status":
            await self._error(send, behaviour.status or 500, delivery)
            return
        if behaviour.name == "reset-after-send":
            await _drop(scope, receive, send, reset=True)
            return
        payload = json.dumps(self.wire.reply(call, self._content(behaviour, call),
                                             _request_id(delivery))).encode()
        start = _start(200, len(payload), self._id_header(delivery))
        if behaviour.name == "truncated":
            await send(start)
            await send({"type": "http.response.body", "body": payload[: len(payload) // 2],
                        "more_body": True})
            await _drop(scope, receive, send, reset=False)
            return
        await send(start)
        await send({"type": "http.response.body", "body": payload})

    def _content(self, behaviour: Behaviour, call: CallInput) -> Content:
        system = None if behaviour.name == "ignores-system-prompt" else call.system
        if behaviour.name == "refusal":
            return Content("refusal", REFUSAL_TEXT)
        answer = self.answer(system, call.user, call.schema)
        if behaviour.name == "hallucinated-key":
            return Content("json", with_hallucinated_key(answer, call.schema))
        if behaviour.name == "wrong-types":
            return Content("json", with_wrong_types(answer))
        if behaviour.name == "fenced-json":
            return Content("text", fenced(answer))
        if behaviour.name == "prose":
            return Content("text", prose(answer))
        return Content("json", answer)

    def _id_header(self, delivery: Delivery) -> list[tuple[bytes, bytes]]:
        headers = [(self.wire.request_id_header.encode(), _request_id(delivery).encode())]
        if self.answers_from:
            headers.append((ANSWERS_HEADER.encode(), self.answers_from.encode()))
        return headers

    async def _error(self, send: Any, err: WireError | int, delivery: Delivery) -> None:
        status = err if isinstance(err, int) else err.status
        note_refusal(status)
        payload = json.dumps(self.wire.error(err, _request_id(delivery))).encode()
        extra = self._id_header(delivery)
        if status in RETRY_AFTER_STATUSES:
            extra += [(b"retry-after", b"1")]
            if self.kind == "openai-chat":
                extra += [(b"retry-after-ms", b"1000")]
        if status == 529:
            extra += [(b"x-should-retry", b"true")]
        await send(_start(status, len(payload), extra))
        await send({"type": "http.response.body", "body": payload})


def _request_id(delivery: Delivery) -> str:
    return f"req_fake{delivery.seq:06d}{delivery.key[:8]}"


def _start(status: int, length: int, extra: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]
    return {"type": "http.response.start", "status": status, "headers": headers + extra}


async def _send_json(send: Any, status: int, body: Any) -> None:
    payload = json.dumps(body).encode()
    await send(_start(status, len(payload), []))
    await send({"type": "http.response.body", "body": payload})


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _until_disconnect(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _elapse(scope: dict[str, Any], receive: Any, seconds: float) -> bool:
    """Wait ``seconds`` (virtually when in-process); False if the client went away first."""
    network: EmulatedNetwork | None = scope.get("extensions", {}).get(NETWORK_EXTENSION)
    if network is not None:
        if not await network.elapse(seconds):
            await _until_disconnect(receive)
            return False
        return True
    if math.isinf(seconds):
        await _until_disconnect(receive)
        return False
    try:  # emulated latency, not synchronisation: it ends early if the client disconnects
        await asyncio.wait_for(_until_disconnect(receive), seconds)
    except TimeoutError:
        return True
    return False


#: called at the moment a fake closes or resets a client's connection, before it waits for its
#: server to see the close (a loaded event loop takes its time): a recorder stamps the call's
#: end then, the moment from which the client can learn of it (harness/providers/recording.py)
ON_DROP: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "fake_on_drop", default=None)


#: called with the status when the fake refuses a request (an HTTP error status, nothing
#: generated): a recorder marks the call refused, whatever was scripted for it
ON_REFUSE: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "fake_on_refuse", default=None)


def note_refusal(status: int) -> None:
    """Tell the recorder of this request (if any) that it was refused with ``status``."""
    hook = ON_REFUSE.get()
    if hook is not None:
        hook(status)


async def _drop(scope: dict[str, Any], receive: Any, send: Any, *, reset: bool) -> None:
    """Close the client's connection (``reset``: a TCP RST), then wait for the server to see it."""
    stamp = ON_DROP.get()
    if stamp is not None:
        stamp()
    network: EmulatedNetwork | None = scope.get("extensions", {}).get(NETWORK_EXTENSION)
    if network is not None:
        network.drop(reset=reset)
    else:
        # uvicorn's send is a bound method of the request cycle, which holds the transport.
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        if transport is None:
            raise RuntimeError("this ASGI server does not expose its connection; run the fake "
                               "provider with FakeServer (uvicorn) or fake_transport()")
        if reset:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # SO_LINGER 0: close() sends RST instead of FIN
                # the client may have closed it first (a service that gave up on the call):
                # then there is nothing left to reset
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()
    await _until_disconnect(receive)
