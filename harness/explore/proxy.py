"""The holding proxy: stands between a service and its Redis or PostgreSQL, holding each step.

::

    service ──TCP──▶ Proxy (--listen) ──TCP──▶ storage (--through)
                      │  each client connection is a Link: one thread relays both ways —
                      │  client→server cut into steps, each held; server→client
                      ▼  counted as answers (PostgreSQL: the backend pid from BackendKeyData)
                     Hold.submit(step) → step.granted, now or later (then link.wake())

Bytes are forwarded unchanged, in both directions. Control steps (connection housekeeping,
``BEGIN``…) pass without asking. The protocol modules (:mod:`redis_wire`, :mod:`pg_wire`) say
where steps end. Whatever goes wrong on the way — the storage cannot be reached, a client speaks
another protocol, a client wants TLS — is kept as a :class:`Problem` with the fix, so explore can
stop with exit 2 and say what it saw instead of reporting "no race found".
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import threading
from collections import deque
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit, urlunsplit

from harness.domain.errors import ConfigError
from harness.explore import pg_wire, redis_wire
from harness.explore.hold import HeldStep, Hold, OpenHold
from harness.scenarios.targets.base import redact

RECV = 65536
CONNECT_TIMEOUT_S = 5.0
SCHEMES = {"redis": "redis", "postgresql": "postgres", "postgres": "postgres"}


@dataclass(frozen=True, slots=True)
class Upstream:
    """The storage server the proxy stands in front of (``--through``)."""

    kind: str  # redis | postgres
    url: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Upstream:
        parts = urlsplit(text.strip())
        if parts.scheme in ("rediss", "redis+tls") or (
                parts.scheme.startswith("postgres") and "sslmode=require" in parts.query):
            raise ConfigError(
                f"{redact(text)!r} asks for TLS; the proxy reads the protocol, so it speaks "
                "plain TCP", field="--through",
                fix="use redis://… or postgresql://…?sslmode=disable for a storage server on "
                "this machine or a trusted network")
        kind = SCHEMES.get(parts.scheme)
        if kind is None:
            raise ConfigError(f"{redact(text)!r} is not a storage URL the proxy speaks",
                              field="--through",
                              fix="write redis://HOST:PORT[/DB] or postgresql://USER@HOST:PORT/DB")
        try:
            port = parts.port or (6379 if kind == "redis" else 5432)
        except ValueError:
            raise ConfigError(f"{redact(text)!r} has a port that is not a number",
                              field="--through", fix="write HOST:PORT, e.g. 127.0.0.1:6379") \
                from None
        return cls(kind, text.strip(), parts.hostname or "127.0.0.1", port)

    def via(self, host: str, port: int) -> str:
        """This URL with the proxy's address in place of the server's (user, database and
        options kept, so the service logs in as before)."""
        parts = urlsplit(self.url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"
        return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, parts.query,
                                      parts.fragment))


@dataclass(frozen=True, slots=True)
class Problem:
    """Something the proxy saw that means explore cannot judge: what, and the fix."""

    kind: str  # unreachable | not_protocol | tls_refused
    what: str
    fix: str


class _Closed(Exception):
    """The connection ended (end of file, or a peer that cannot be served)."""


class Link:
    """One client connection and its connection to the server, relayed by one thread.

    The thread polls both sockets (and a wake-up socket): the client's bytes
    are cut into steps and queued; the first queued step goes to the server once the hold has
    granted it, and while it waits the client is not read (its bytes wait in the kernel). The
    server's bytes are counted as answers and relayed at once. Writes that would block are
    buffered and finished when the socket can take them; the side feeding a full buffer is not
    read meanwhile, so memory stays bounded and neither direction can block the other.
    """

    def __init__(self, proxy: Proxy, client: socket.socket, server: socket.socket,
                 number: int) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.number = number
        self.pid: int | None = None  # PostgreSQL backend pid (BackendKeyData)
        self.in_tx = False  # PostgreSQL: the last ReadyForQuery said "in a transaction"
        self.waiting: deque[HeldStep] = deque()  # forwarded steps whose answers are still due
        self.queued: deque[HeldStep] = deque()  # cut from the client's bytes, not yet forwarded
        self.out = {client: bytearray(), server: bytearray()}  # bytes a socket could not take
        self.lock = threading.Lock()
        self.closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        kind = proxy.upstream.kind
        self._up = self._redis_up if kind == "redis" else self._pg_up
        self._down = self._redis_down if kind == "redis" else self._pg_down
        self._framer: redis_wire.RedisFramer | pg_wire.PgFramer = (
            redis_wire.RedisFramer() if kind == "redis" else pg_wire.PgFramer())
        self._from_client = bytearray()
        self._from_server = bytearray()
        self._started = False  # PostgreSQL: the startup message went through

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name=f"proxy-{self.number}").start()

    def wake(self) -> None:
        """A held step was granted (or the link must close): the link's thread looks again."""
        with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed
            self._wake_w.send(b"\0")

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.wake()
        self.proxy.hold.gone(self)
        self.proxy.forget(self)

    # -- the loop ---------------------------------------------------------------------------
    def _run(self) -> None:
        client, server = self.client, self.server
        client.setblocking(False)
        server.setblocking(False)
        poller = select.poll()  # three descriptors: no kernel object to keep in step
        poller.register(self._wake_r, select.POLLIN)
        fds = {client.fileno(): client, server.fileno(): server}
        masks = {client: -1, server: -1}
        try:
            while not self.closed:
                for sock, mask in self._interest():
                    if mask != masks[sock]:
                        poller.register(sock, mask)  # registering again modifies
                        masks[sock] = mask
                for fd, events in poller.poll():
                    found = fds.get(fd)
                    if found is None:  # the wake-up socket
                        self._wake_r.recv(4096)
                        self._pump()
                        continue
                    sock = found
                    if events & select.POLLOUT:
                        self._flush(sock)
                    if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        self._read(sock)
        except (OSError, ValueError, _Closed):  # ValueError: a socket closed by close()
            pass
        finally:
            self.close()
            self._wake_r.close()
            self._wake_w.close()

    def _interest(self) -> tuple[tuple[socket.socket, int], tuple[socket.socket, int]]:
        """Read the client unless a step is held or the server's buffer is full;
        read the server unless the client's buffer is full; write where bytes wait."""
        to_client, to_server = self.out[self.client], self.out[self.server]
        return ((self.client, (0 if self.queued or to_server else select.POLLIN)
                 | (select.POLLOUT if to_client else 0)),
                (self.server, (0 if to_client else select.POLLIN)
                 | (select.POLLOUT if to_server else 0)))

    def _read(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(RECV)
        except BlockingIOError:
            return
        if not data:
            raise _Closed
        if sock is self.client:
            self._from_client += data
            self._up()
            self._pump()
        else:
            self._from_server += data
            self._down(data)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        """Send now what the socket takes; buffer the rest (see :meth:`_interest`)."""
        out = self.out[sock]
        if not out:
            try:
                sent = sock.send(data)
            except BlockingIOError:
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        out += data

    def _flush(self, sock: socket.socket) -> None:
        out = self.out[sock]
        try:
            sent = sock.send(out)
        except BlockingIOError:
            return
        del out[:sent]

    # -- steps ------------------------------------------------------------------------------
    def _queue(self, raw: bytes, shape: str | None, answers: int) -> None:
        """A step cut from the client's bytes: counted now, forwarded by :meth:`_pump`."""
        self.proxy.count(held=shape is not None)
        self.queued.append(HeldStep(self, shape or "", raw, answers, next(self.proxy.seq),
                                left=answers, granted=shape is None))

    def _pump(self) -> None:
        """Forward queued steps in order, each once the hold granted it."""
        while self.queued:
            step = self.queued[0]
            if not step.granted and not step.offered:
                step.offered = True
                self.proxy.hold.submit(step)
            if not step.granted:
                return
            self.queued.popleft()
            if step.answers:
                with self.lock:
                    self.waiting.append(step)
            self._send(self.server, step.raw)
            if not step.answers and step.shape:
                step.done = True
                self.proxy.hold.answered(step)

    def _answer(self) -> None:
        with self.lock:
            step = self.waiting[0] if self.waiting else None
            if step is None:
                return
            step.left -= 1
            if step.left > 0:
                return
            self.waiting.popleft()
        step.done = True
        if step.shape:
            self.proxy.hold.answered(step)

    # -- Redis ----------------------------------------------------------------------------------
    def _redis_up(self) -> None:
        buf = self._from_client
        framer = self._framer
        assert isinstance(framer, redis_wire.RedisFramer)
        try:
            commands, end, whole = framer.split(buf)
        except redis_wire.NotRedis as exc:
            self.proxy.problem("not_protocol", f"a client sent bytes that are not Redis "
                               f"commands ({exc}; first bytes {bytes(buf[:16])!r})",
                               "point the service's Redis URL (not its database, nor a "
                               "TLS client) at the proxy")
            raise _Closed from None
        if not commands or (not whole and len(buf) < 1 << 20):
            return  # a client writes whole commands: the rest of this write is coming
        shape, answers = framer.step(commands)
        raw = bytes(buf[:end])
        del buf[:end]
        self._queue(raw, shape, answers)

    def _redis_down(self, data: bytes) -> None:
        buf = self._from_server
        at = 0
        while (found := redis_wire.reply_end(buf, at)) is not None:
            at, push = found
            if not push:
                self._answer()
        del buf[:at]
        self._send(self.client, data)  # after the accounting: the client acts on it at once

    # -- PostgreSQL -----------------------------------------------------------------------------
    def _pg_up(self) -> None:
        buf = self._from_client
        framer = self._framer
        assert isinstance(framer, pg_wire.PgFramer)
        try:
            while not self._started and (head := pg_wire.startup(buf)) is not None:
                length, code = head
                if len(buf) < length:
                    return
                first = bytes(buf[:length])
                del buf[:length]
                if code in (pg_wire.SSL_REQUEST, pg_wire.GSSENC_REQUEST):
                    self.proxy.problem(
                        "tls_refused", "the service asked the proxy for an encrypted "
                        "connection (SSLRequest); the proxy answered 'N' (plain TCP only)",
                        "if the service gave up, set sslmode=disable (or prefer) in the "
                        "database URL it uses")
                    self._send(self.client, b"N")
                    continue
                if code == pg_wire.CANCEL_REQUEST:
                    self.proxy.cancel(first)
                    raise _Closed
                self._send(self.server, first)
                self._started = True
            if not self._started:
                return
            steps, used = framer.cut(buf)
        except pg_wire.NotPostgres as exc:
            self.proxy.problem("not_protocol", f"a client sent bytes that are not the "
                               f"PostgreSQL protocol ({exc})", "point the service's "
                               "PostgreSQL URL (not its Redis, nor a TLS client) at the proxy")
            raise _Closed from None
        del buf[:used]
        for step in steps:
            self._queue(step.raw, step.shape, step.answers)

    def _pg_down(self, data: bytes) -> None:
        buf = self._from_server
        found, used = pg_wire.messages(buf)
        del buf[:used]
        for kind, payload in found:
            if kind == ord("Z"):
                self.in_tx = payload[:1] in (b"T", b"E")
                self._answer()
            elif self.pid is None:
                self.pid = pg_wire.backend_pid(kind, payload)
        self._send(self.client, data)  # after the accounting: the client acts on it at once


class Proxy:
    """Listens for the service's connections and relays them to ``upstream`` through ``hold``."""

    def __init__(self, upstream: Upstream, *, listen: tuple[str, int] = ("127.0.0.1", 0),
                 hold: Hold | None = None) -> None:
        self.upstream = upstream
        self.hold: Hold = hold or OpenHold()
        self.seq = itertools.count()
        self.links: set[Link] = set()
        self.problems: list[Problem] = []
        self.commands = 0  # steps forwarded (held or control)
        self.held_steps = 0
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(listen)
        except OSError as exc:
            self.sock.close()
            raise ConfigError(f"the proxy cannot listen on {listen[0]}:{listen[1]}: "
                              f"{exc.strerror or exc}", field="--listen",
                              fix="choose a free port, or leave --listen out for a free one") \
                from None
        self.sock.listen(64)
        self.host, self.port = self.sock.getsockname()[:2]
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True, name="proxy-accept")

    @property
    def url(self) -> str:
        """The URL the service should use instead of the storage server's."""
        return self.upstream.via(self.host, self.port)

    def start(self) -> Proxy:
        self.thread.start()
        return self

    def _accept(self) -> None:
        while self.running:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                server = socket.create_connection((self.upstream.host, self.upstream.port),
                                                  timeout=CONNECT_TIMEOUT_S)
            except OSError as exc:
                self.problem("unreachable", f"the proxy cannot reach the storage server at "
                             f"{self.upstream.host}:{self.upstream.port}: "
                             f"{exc.strerror or exc}", "start it, or fix --through")
                client.close()
                continue
            server.settimeout(None)
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.connections += 1
                link = Link(self, client, server, self.connections)
                self.links.add(link)
            link.start()

    def count(self, *, held: bool) -> None:
        with self.lock:
            self.commands += 1
            self.held_steps += held

    def problem(self, kind: str, what: str, fix: str) -> None:
        with self.lock:
            if not any(p.kind == kind and p.what == what for p in self.problems):
                self.problems.append(Problem(kind, what, fix))

    def cancel(self, message: bytes) -> None:
        """Pass a PostgreSQL CancelRequest to the server on a connection of its own."""
        try:
            with socket.create_connection((self.upstream.host, self.upstream.port),
                                          timeout=CONNECT_TIMEOUT_S) as conn:
                conn.sendall(message)
        except OSError:
            pass

    def forget(self, link: Link) -> None:
        with self.lock:
            self.links.discard(link)

    def close(self) -> None:
        self.running = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it
        with contextlib.suppress(OSError):
            self.sock.close()
        for link in list(self.links):
            link.close()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["HeldStep", "Hold", "Link", "OpenHold", "Problem", "Proxy", "Upstream"]
