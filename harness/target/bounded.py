"""The one way the harness reads a target: every request has a total deadline (connect, send,
headers and body together, not a timeout per read) and every answer body a size limit.

A hostile or broken service can send headers at one byte a second (each read arrives within any
read timeout), an endless chunked body, or a 50 MB answer. :class:`BoundedTransport` is httpx's
transport with a network backend that gives every socket operation only what is left of the
request's deadline, and a response stream that stops at ``body_bytes``; what exceeds either is
the target's error, named (:class:`DeadlineExceeded`, :class:`AnswerTooLarge`, with the size).

:func:`abort_all` shuts every socket these transports hold (it is registered with
:mod:`harness.domain.interrupt`: the CLI calls it on Ctrl-C and SIGTERM), so a thread blocked
on a target's answer returns at once (:class:`Interrupted`).
"""

from __future__ import annotations

import socket
import threading
import time
import weakref
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpcore
import httpx

from harness.domain.interrupt import on_interrupt
from harness.target.limits import DEFAULT_DEADLINE_S, Limits, size_text

__all__ = ["AnswerTooLarge", "BoundExceeded", "BoundedTransport", "DeadlineExceeded",
           "Interrupted", "abort_all", "json_body", "reset_abort"]


class BoundExceeded(httpx.TransportError):
    """The target's answer broke a limit of the harness (its text says which and how much)."""

    @property
    def detail(self) -> str:
        return str(self)


class AnswerTooLarge(BoundExceeded):
    """The answer's body is over ``limits.body_bytes``."""


class DeadlineExceeded(BoundExceeded):
    """No whole answer (connect + headers + body) within the request's deadline."""


class Interrupted(BoundExceeded):
    """The run was interrupted (Ctrl-C, SIGTERM) while this request waited."""


_local = threading.local()
_aborted = threading.Event()
_live_lock = threading.RLock()  # re-entrant: abort_all runs in a signal handler
_live: weakref.WeakSet[_Stream] = weakref.WeakSet()


@contextmanager
def _until(deadline: float) -> Iterator[None]:
    """Socket operations in this thread get at most until ``deadline`` (monotonic seconds);
    nested calls keep the earlier deadline."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = deadline if previous is None else min(previous, deadline)
    try:
        yield
    finally:
        _local.deadline = previous


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The timeout for one socket operation: the caller's, cut to what is left of the deadline
    (``expired`` raised when none is left, or the run was interrupted)."""
    if _aborted.is_set():
        raise httpcore.ReadError("the run was interrupted")
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


#: Linux: acknowledge what arrives at once (set before each read: the kernel leaves quick-ack
#: mode by itself). A server that writes an answer's headers and body in two writes (Python's
#: http.server does) has its body held by Nagle's algorithm until the headers are acknowledged,
#: and a delayed acknowledgement costs 40 ms per answer: every look at a job, every request.
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class _Stream(httpcore.NetworkStream):
    """A connection whose every read and write is cut to the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner
        sock = inner.get_extra_info("socket")
        self._sock = sock if isinstance(sock, socket.socket) and _QUICKACK is not None else None
        with _live_lock:
            _live.add(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._sock is not None and _QUICKACK is not None:
            with suppress(OSError):  # a closed socket: the read says so
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        with _live_lock:
            _live.discard(self)
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def abort(self) -> None:
        """Shut the socket: a thread blocked reading it returns now."""
        sock = self._inner.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Backend(httpcore.NetworkBackend):
    """httpcore's sync backend, its connections cut to the request's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class BoundedTransport(httpx.HTTPTransport):
    """httpx's transport with a total deadline per request and a size limit per answer body.

    ``bounds`` (a profile's ``limits:``) gives the body limit and may give the deadline;
    else ``deadline_s``. Other keyword arguments go to :class:`httpx.HTTPTransport`."""

    def __init__(self, *, bounds: Limits | None = None,
                 deadline_s: float = DEFAULT_DEADLINE_S, **options: Any) -> None:
        super().__init__(**options)
        # httpx does not pass a network backend through; its pool keeps the one it uses here
        pool: Any = self._pool
        pool._network_backend = _Backend(pool._network_backend)
        bounds = bounds or Limits()
        self.body_bytes = bounds.body_bytes
        self.deadline_s = bounds.deadline_s or deadline_s

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.deadline_s
        request.headers["Accept-Encoding"] = "identity"  # a compressed answer hides its size
        with _until(deadline):
            try:
                response = super().handle_request(request)
            except httpx.TransportError as exc:
                raise self._named(exc, deadline) from None
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.body_bytes:
            response.close()
            raise AnswerTooLarge(f"the answer's body is {size_text(int(declared))} "
                                 f"(Content-Length), over the limit of "
                                 f"{size_text(self.body_bytes)} (limits.body_bytes)")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
            response.close()
            raise AnswerTooLarge(f"the answer is compressed ({encoding}), which the harness "
                                 "did not ask for and cannot bound: send it uncompressed")
        decoder = None if encoding == "identity" else zlib.decompressobj(wbits=47)
        if decoder is not None:  # decoded here, within the limit: not by httpx, unbounded
            del response.headers["content-encoding"]
        response.stream = _Capped(response.stream, self, deadline, decoder)
        return response

    def _named(self, exc: httpx.TransportError, deadline: float) -> httpx.TransportError:
        """``exc`` as the bound it hit, if it hit one (else unchanged)."""
        if isinstance(exc, BoundExceeded):
            return exc
        if _aborted.is_set():
            return Interrupted("the run was interrupted while waiting for the target")
        if isinstance(exc, httpx.TimeoutException) and time.monotonic() >= deadline - 0.05:
            return DeadlineExceeded(f"no whole answer within {self.deadline_s:g} s (the "
                                    "deadline of one request: connect, headers and body)")
        return exc


class _Capped(httpx.SyncByteStream):
    """An answer's body, read under the request's deadline and stopped at the size limit."""

    def __init__(self, inner: Any, transport: BoundedTransport, deadline: float,
                 decoder: Any = None) -> None:
        self._inner = inner
        self._transport = transport
        self._deadline = deadline
        self._decoder = decoder  # gzip/deflate: the limit holds for the decoded bytes

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        seen, limit = 0, self._transport.body_bytes
        while True:
            with _until(self._deadline):
                try:
                    chunk = next(chunks)
                except StopIteration:
                    if self._decoder is not None and seen < limit:  # what the decoder holds
                        yield self._decoder.flush()[:limit - seen]
                    return
                except httpx.TransportError as exc:
                    raise self._transport._named(exc, self._deadline) from None
            if self._decoder is not None:
                try:
                    chunk = self._decoder.decompress(chunk, limit + 1 - seen)
                except zlib.error as exc:
                    raise httpx.DecodingError(f"the compressed answer is broken: {exc}") from None
            seen += len(chunk)
            if seen > limit:
                raise AnswerTooLarge(f"the answer's body is over the limit of "
                                     f"{size_text(limit)} (limits.body_bytes): {seen:,} bytes "
                                     f"{'decoded' if self._decoder else 'read'}, more coming")
            yield chunk

    def close(self) -> None:
        self._inner.close()


def json_body(response: httpx.Response) -> Any:
    """The answer's JSON, or ValueError if it is not JSON — also when it is nested too deeply
    for Python to read (``[[[[…`` half a million deep fits in the body limit, and ``json``
    raises RecursionError, not ValueError, on it)."""
    try:
        return response.json()
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def abort_all() -> None:
    """Shut every connection to a target now, and refuse new ones (Ctrl-C, SIGTERM): a thread
    blocked on a target's answer gets :class:`Interrupted` at once."""
    _aborted.set()
    with _live_lock:
        streams = list(_live)
    for stream in streams:
        stream.abort()


def reset_abort() -> None:
    """Allow connections again after :func:`abort_all` (for a process that goes on)."""
    _aborted.clear()


on_interrupt(abort_all, reset_abort)
