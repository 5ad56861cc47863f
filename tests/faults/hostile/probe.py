"""A hostile service on loopback: raw HTTP/1.1 over a socket, so it can do what no framework
lets a server do — headers at one byte a second, a chunked body that never ends, 50 MB
answers, ids with ``../``, ``?``, ``#`` or CR LF, invalid JSON, redirects, a secret echoed.

Each request is answered by the test's ``answer(request) -> Answer``; the probe records every
request line and its headers. Stopping it ends every connection at once (each sender checks
the stop event between writes).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.tls import tls_for


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # the request target as sent (path and query, still percent-encoded)
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: the body: bytes, or a function making the chunks anew for each answer
    body: bytes | Callable[[], Iterator[bytes]] = b""
    #: seconds between two bytes of the head (status line + headers): slowloris in reverse
    head_byte_s: float = 0.0
    chunked: bool = False  # send ``body`` (an iterator) as chunks, without Content-Length

    @staticmethod
    def json(data: Any, status: int = 200, **headers: str) -> Answer:
        return Answer(status, {"Content-Type": "application/json", **headers},
                      json.dumps(data).encode())


REASONS = {200: "OK", 201: "Created", 302: "Found", 401: "Unauthorized", 404: "Not Found"}


class Probe:
    """``with Probe(answer) as probe: probe.url``; ``probe.requests`` lists what came."""

    def __init__(self, answer: Callable[[Request], Answer]) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.arrived = threading.Event()  # set when a request has come
        self.stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self._threads: list[threading.Thread] = []
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> Probe:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in list(self._threads):
            thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        buffer = b""
        with conn:
            while not self.stop.is_set():
                request, buffer = self._read(conn, buffer)
                if request is None:
                    return
                self.requests.append(request)
                self.arrived.set()
                try:
                    answer = self.answer(request)
                except Exception as exc:  # the test's handler failed: say so, as a 500
                    answer = Answer(500, {}, repr(exc).encode())
                try:
                    conn.settimeout(10)  # a slow reader is not a closed one
                    self._send(conn, answer)
                    conn.settimeout(0.2)  # reads wake up to look at the stop event
                except OSError:
                    return

    def _read(self, conn: socket.socket, buffer: bytes) -> tuple[Request | None, bytes]:
        while b"\r\n\r\n" not in buffer:
            chunk = self._recv(conn)
            if not chunk:
                return None, b""
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(":") for line in lines[1:])}
        size = int(headers.get("content-length", "0"))
        while len(buffer) < size:
            chunk = self._recv(conn)
            if not chunk:
                return None, b""
            buffer += chunk
        return Request(method, target, headers, buffer[:size]), buffer[size:]

    def _recv(self, conn: socket.socket) -> bytes:
        while not self.stop.is_set():
            try:
                return conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:  # the client reset the connection (it stopped reading an answer)
                return b""
        return b""

    def _send(self, conn: socket.socket, answer: Answer) -> None:
        headers = dict(answer.headers)
        if answer.chunked:
            headers["Transfer-Encoding"] = "chunked"
        elif isinstance(answer.body, bytes):
            headers.setdefault("Content-Length", str(len(answer.body)))
        head = f"HTTP/1.1 {answer.status} {REASONS.get(answer.status, 'X')}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        if answer.head_byte_s:
            for byte in head.encode("latin-1"):
                if self.stop.wait(answer.head_byte_s):
                    return
                conn.sendall(bytes([byte]))
        else:
            conn.sendall(head.encode("latin-1"))
        body = [answer.body] if isinstance(answer.body, bytes) else answer.body()
        for piece in body:
            if self.stop.is_set():
                return
            conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                         if answer.chunked else piece)
        if answer.chunked:
            conn.sendall(b"0\r\n\r\n")


def call_provider(port: str, text: str, *, wait: bool = False) -> None:
    """What a job service's worker does: call the (fake) OpenAI provider at ``port`` with
    ``text``, in the background (the submit is answered at once; failures are ignored), or
    before answering the submit (``wait``)."""
    def call() -> None:
        with contextlib.suppress(httpx.HTTPError):
            url = f"http://127.0.0.1:{port}/v1/chat/completions"
            httpx.post(url, timeout=10, verify=tls_for(url),
                       json={"model": "m", "messages": [{"role": "user", "content": text}]})
    if wait:
        call()
    else:
        threading.Thread(target=call, daemon=True).start()


def endless(piece: bytes = b"x" * 65536) -> Iterator[bytes]:
    """A body that never ends."""
    while True:
        yield piece


def sized(total: int, piece: int = 1 << 20) -> Iterator[bytes]:
    """``total`` bytes, a MiB at a time (never held whole by the probe)."""
    chunk = b"y" * piece
    while total > 0:
        yield chunk[:total]
        total -= piece
