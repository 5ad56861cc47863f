"""One import of the SDKs per test run, not one per xdist worker: the *zygote*.

Each xdist worker needs a fork server (tests/_forkserver.py), a Python that has imported the
SDKs the example services use (~2 CPU-s). The xdist controller starts, before the workers, one
zygote (``python -m tests._zygote FD NAME…``): it listens on a socket in a private folder (mode
0700) whose path ``HARNESS_TEST_ZYGOTE`` names, which the workers inherit. On its first request
it imports the SDKs; for each request (a worker's end of a socket pair and a log file, sent
with ``SCM_RIGHTS``) it forks a child that closes the zygote's descriptors and becomes that
worker's fork server (``serve``): the worker's own, with its own children, as before. The zygote
starts no thread, runs nothing of a test, and reaps the fork servers that exit. It runs in a
session of its own: a Ctrl-C reaches the workers, whose end ends their fork servers.

The zygote ends when its stdin closes: the controller closes it (``stop``), or died. It then
reaps, for at most ``DRAIN_S``, the fork servers that end (each ends when its worker closes its
socket); one that outlives it serves a live worker and is left to end with it: the zygote kills
nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import NoReturn

from tests import _forkserver

ROOT = Path(__file__).resolve().parents[1]
BACKLOG = 64  # workers whose requests wait while the zygote imports the SDKs
REQUEST_TIMEOUT_S = 10.0  # a worker sends its request as soon as it connects
DRAIN_S = 10.0
STOP_TIMEOUT_S = 30.0


# -- the zygote (its own process: python -m tests._zygote FD NAME…) ----------------------------

def main(listen_fd: int, names: list[str]) -> None:
    """Fork a fork server for each request until stdin closes; then reap (``_drain``)."""
    listener = socket.socket(fileno=listen_fd)
    wake_r, wake_w = _forkserver.wakeup()
    children: set[int] = set()
    preloaded = False
    while True:
        ready, _, _ = select.select([0, listener.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        _forkserver.reap(children, None)
        if 0 in ready and not os.read(0, 4096):  # the controller stopped it, or died
            break
        fds = _request(listener) if listener.fileno() in ready else None
        if fds is None:
            continue
        if not preloaded:
            _forkserver.preload(names)
            preloaded = True
        pid = os.fork()
        if pid == 0:
            _become_server(fds, [listener.detach(), wake_r, wake_w])
        children.add(pid)
        for fd in fds:
            os.close(fd)
    listener.close()
    _drain(children, wake_r)


def _request(listener: socket.socket) -> list[int] | None:
    """The fork server's socket and log file a worker sent (``_forkserver._ask``), or None."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return None
    with conn:
        conn.settimeout(REQUEST_TIMEOUT_S)
        try:
            _, fds, _, _ = socket.recv_fds(conn, 64, 2)
        except OSError:
            return None
    if len(fds) == 2:
        return fds
    for fd in fds:
        os.close(fd)
    return None


def _become_server(fds: list[int], inherited: list[int]) -> NoReturn:
    """In the forked child: close the zygote's descriptors (``inherited``, stdin), put output
    on the worker's log file and serve the worker's socket as its fork server."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for fd in inherited:
            os.close(fd)
        server, log = fds
        _forkserver.take_output(log)  # stdin not the controller's pipe: the zygote's alone
        sock = socket.socket(fileno=server)
        sock.send(json.dumps({"ready": os.getpid()}).encode())
        _forkserver.serve(sock)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def _drain(children: set[int], wake_r: int) -> None:
    """Reap the fork servers that end within ``DRAIN_S``."""
    deadline = time.monotonic() + DRAIN_S
    while True:
        _forkserver.reap(children, None)
        left = deadline - time.monotonic()
        if not children or left <= 0:
            return
        if select.select([wake_r], [], [], left)[0]:
            os.read(wake_r, 4096)


# -- the controller's side ---------------------------------------------------------------------

class Zygote:
    """A zygote listening at ``path``; it imports ``names`` on its first request."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="harness-zygote-"))  # mode 0700
        self.path = str(self.folder / "socket")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener, \
                    (self.folder / "log").open("wb") as log:
                listener.bind(self.path)
                listener.listen(BACKLOG)
                self.process = subprocess.Popen(
                    [sys.executable, "-u", "-m", "tests._zygote", str(listener.fileno()),
                     *names], pass_fds=[listener.fileno()], stdin=subprocess.PIPE,
                    stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def stop(self) -> str | None:
        """Close its stdin, wait for it to end (killed after ``STOP_TIMEOUT_S``), remove its
        folder; what went wrong, if anything (its exit status and output)."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(timeout=STOP_TIMEOUT_S)
        try:
            said = (self.folder / "log").read_text("utf-8", errors="replace")
        except FileNotFoundError:  # stopped before
            said = ""
        shutil.rmtree(self.folder, ignore_errors=True)
        if code == 0 and not said:
            return None
        return f"the tests' zygote ended with {code}: {said[-2000:] or '(it said nothing)'}"


_running: list[Zygote] = []


def start() -> None:
    """In the xdist controller, before the workers start: the run's zygote, its socket's path
    in ``HARNESS_TEST_ZYGOTE`` for the workers to inherit. One that cannot start is none: the
    workers start fork servers of their own."""
    if _running:
        return
    try:
        zygote = Zygote(_forkserver.PRELOAD)
    except OSError as exc:
        print(f"tests/_zygote.py: the zygote did not start ({exc}); each worker imports the "
              "SDKs itself", file=sys.stderr)
        return
    _running.append(zygote)
    os.environ[_forkserver.ZYGOTE_ENV] = zygote.path


def stop() -> None:
    """End the run's zygote, if this process started it (its fork servers reaped)."""
    while _running:
        zygote = _running.pop()
        if os.environ.get(_forkserver.ZYGOTE_ENV) == zygote.path:
            del os.environ[_forkserver.ZYGOTE_ENV]
        problem = zygote.stop()
        if problem:
            print(f"tests/_zygote.py: {problem}", file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
