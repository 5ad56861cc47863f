"""Serve a fake provider on a loopback socket with uvicorn (foreground, or in a test thread)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from typing import Any

import uvicorn

from harness.domain.errors import ConfigError
from harness.providers.fake import FakeProvider


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port); ConfigError if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it every response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)  # connections queue from now on, before uvicorn accepts them
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          field="--port", fix="choose a free port, or --port 0 for any") from None
    sock.set_inheritable(True)
    return sock


class RepeatFilter(logging.Filter):
    """Lets the first ``keep`` records of each message through, then one line saying the rest
    are not shown: a caller sending garbage bytes on 400 connections gets 400 "Invalid HTTP
    request received." warnings from uvicorn, and the run's output is not theirs to fill."""

    def __init__(self, keep: int = 3) -> None:
        super().__init__()
        self.keep = keep
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            n = self.seen[str(record.msg)] = self.seen.get(str(record.msg), 0) + 1
        if n == self.keep + 1:
            record.msg, record.args = f"{record.msg} (repeated; further ones not shown)", ()
        return n <= self.keep + 1


def uvicorn_server(app: FakeProvider) -> uvicorn.Server:
    """A quiet uvicorn server for ``app`` that leaves global logging configuration alone (bar
    a :class:`RepeatFilter` on uvicorn's error log)."""
    error_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RepeatFilter) for f in error_log.filters):
        error_log.addFilter(RepeatFilter())
    config = uvicorn.Config(app, lifespan="off", access_log=False, log_config=None,
                            log_level=None, timeout_graceful_shutdown=2, loop="asyncio")
    return uvicorn.Server(config)


class FakeServer:
    """A fake provider on ``http://host:port`` served by uvicorn in a background thread.

    ``with FakeServer(FakeProvider("openai-chat")) as server: server.url`` — ``start()`` returns
    once ``GET /_fake/health`` answers on the socket.
    """

    def __init__(self, app: FakeProvider, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self._sock = bind_socket(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._server = uvicorn_server(app)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name=f"fake-provider:{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> FakeServer:
        self._thread.start()
        wait_until_ready(self.host, self.port, timeout_s=timeout_s, alive=self._thread.is_alive)
        return self

    def stopping(self) -> None:
        """Ask the server to stop and return at once (:meth:`stop` waits for it): several
        servers asked first stop together, not one after the other."""
        self._server.should_exit = True

    def stop(self) -> None:
        self.stopping()
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def health(host: str, port: int, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """``GET /_fake/health`` on the socket (raises OSError if nothing answers)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request("GET", "/_fake/health")
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise OSError(f"health answered HTTP {response.status}")
        return json.loads(body)
    finally:
        conn.close()


def wait_until_ready(host: str, port: int, *, timeout_s: float = 10.0,
                     alive: Any = lambda: True) -> dict[str, Any]:
    """Poll the socket until ``GET /_fake/health`` answers (a readiness poll on the socket).

    Once the socket listens, a try blocks on I/O until the server answers; a refused connection
    (a server in another process that has not bound yet) is retried every 10 ms while
    ``alive()`` holds and the deadline has not passed.
    """
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"the fake provider on {host}:{port} stopped before it was ready")
        try:
            return health(host, port, timeout_s=max(0.1, deadline - time.monotonic()))
        except (OSError, http.client.HTTPException, ValueError) as exc:
            last = exc
            # Nobody listening yet (a server starting in another process): poll again shortly.
            # This polls for a condition; it is not a fixed sleep standing in for one.
            time.sleep(0.01)
    raise TimeoutError(f"the fake provider on {host}:{port} did not answer in {timeout_s} s: "
                       f"{last}")
