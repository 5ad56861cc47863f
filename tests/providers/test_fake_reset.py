"""The fake's reset (``reset-after-send``): SO_LINGER 0, then abort, so the client sees a TCP
RST. A connection the client already closed (a service that gave up on the call) has nothing
left to reset: no error escapes the fake (uvicorn would print its traceback into the user's
drill output, as it once did under load)."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from harness.providers.fake import _drop


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
