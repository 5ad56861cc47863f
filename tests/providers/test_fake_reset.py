"""The fake's reset (``reset-after-send``): SO_LINGER 0, then abort, so the client sees a TCP
RST. A connection the client already closed (a service that gave up on the call) has nothing
left to reset: no error escapes the fake (uvicorn would print its traceback into the user's
drill output, as it once did under load)."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import Any

from harness.providers.fake import NETWORK_EXTENSION, _drop
from harness.providers.recording import STREAM_CUT, RecordingFake


class _Transport:
    """What uvicorn's request cycle holds: the connection's transport and its socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.aborted = sock, False

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def abort(self) -> None:
        self.aborted = True


class _Cycle:
    def __init__(self, sock: socket.socket) -> None:
        self.transport = _Transport(sock)

    async def send(self, message: dict[str, Any]) -> None:
        raise AssertionError("a dropped connection sends nothing")


async def _disconnected() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def test_a_reset_lingers_zero_then_aborts() -> None:
    with socket.socket() as sock:
        cycle = _Cycle(sock)
        asyncio.run(_drop({}, _disconnected, cycle.send, reset=True))
        linger = struct.unpack("ii", sock.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8))
        assert linger == (1, 0) and cycle.transport.aborted


def test_a_reset_of_a_connection_the_client_already_closed_raises_nothing() -> None:
    sock = socket.socket()
    sock.close()  # its descriptor gone: setsockopt fails with EBADF, as it did under load
    cycle = _Cycle(sock)
    asyncio.run(_drop({}, _disconnected, cycle.send, reset=True))
    assert cycle.transport.aborted


class _SlowToSeeTheClose:
    """An emulated network whose server sees the close only when the test lets it (a loaded
    event loop), and the ASGI messages of one streamed chat request carrying TAG."""

    def __init__(self, fake: Any) -> None:
        self.fake, self.dropped_at, self.seen_at = fake, -1.0, -1.0
        self.closed, self.see = asyncio.Event(), asyncio.Event()
        self.body = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [
            {"role": "user", "content": f"Summarise ticket {TAG}."}]}).encode()
        self.sent: list[dict[str, Any]] = []

    def drop(self, *, reset: bool) -> None:
        self.dropped_at = self.fake.now()
        self.closed.set()

    async def receive(self) -> dict[str, Any]:
        if self.body:
            body, self.body = self.body, b""
            return {"type": "http.request", "body": body, "more_body": False}
        await self.see.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


TAG = "drill-0123456789ab"


def test_a_cut_stream_ends_when_the_fake_closes_not_when_its_loop_sees_it() -> None:
    """The fake's record of a cut call ends at the moment it closed the connection (the client
    can learn of the end from then), not when its loaded loop got round to seeing the close: a
    fallback the service starts on learning of the cut is after the cut's end, not beside it."""
    fake = RecordingFake("openai-chat")
    fake.script_tag(TAG, STREAM_CUT)
    net = _SlowToSeeTheClose(fake)
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
             "headers": [(b"content-type", b"application/json"),
                         (b"authorization", b"Bearer sk-test")],
             "extensions": {NETWORK_EXTENSION: net}}

    async def run() -> None:
        call = asyncio.ensure_future(fake(scope, net.receive, net.send))
        await asyncio.wait_for(net.closed.wait(), 10)
        await asyncio.sleep(0.3)  # the loop sees the close this much later (the gap measured)
        net.seen_at = fake.now()
        net.see.set()
        await asyncio.wait_for(call, 10)

    asyncio.run(run())
    [record] = fake.received()
    assert record.outcome == "cut" and record.ended_at is not None
    assert net.sent[0]["status"] == 200 and net.sent[1].get("more_body")  # the first event
    assert net.seen_at - net.dropped_at >= 0.3
    assert abs(record.ended_at - net.dropped_at) < 0.01, (record.ended_at, net.dropped_at)
