"""Python services for the tests, started as processes of their own without paying for their
imports each time: a fork server.

An example service (examples/drill/*_service.py) imports the official ``openai`` and
``anthropic`` SDKs: 1.5-2 s of CPU before it listens, and the suite starts about fifty of
them. Each test process (each xdist worker) gets, on first use, one *fork server*: a Python
that has imported those SDKs and waits. ``popen([sys.executable, script, *args], …)`` asks
it to fork; the child becomes the service: its own process and pid, its own session
(``setsid``), the environment, working folder and arguments asked for, stdout and stderr on the
pipe it was handed, and the script run as ``__main__`` (``runpy``), importing everything else
itself, exactly as ``python script …`` would. Only the import of the SDKs is shared, done
before any request, in a process that never runs a service itself and starts no thread.

Under pytest-xdist the SDKs are imported once per run, not once per worker: the controller
starts a *zygote* (tests/_zygote.py) whose socket ``HARNESS_TEST_ZYGOTE`` names, and a worker
asks it to fork the worker's fork server, which inherits the imports. Without that variable,
or when the zygote does not answer (it died, or never started), the test process starts a fork
server of its own (``python -m tests._forkserver FD``), which imports the SDKs itself.

The same fork server runs ``python -m harness.cli`` (tests/_cli.py): a request that names a
``module`` brings stdin, stdout and stderr apart, and the child sets up ``sys.path``, stdio and
warning filters as ``python -m`` does, runs the module as ``__main__`` and ends as Python ends
(threads waited for, ``atexit`` run); one whose environment would change how Python starts
execs a fresh Python instead.

Settings Python reads only when it starts (``PYTHONWARNINGS``, ``PYTHONHASHSEED``, ``-X``
options) are the fork server's: those of the process that started it (the zygote's are the
xdist controller's); the services do not depend on them. One setting differs from a fresh
Python's: a child's cyclic garbage collector starts after 20,000 new objects, not 700 (as in
the test processes, tests/conftest.py): the drills of the example services took about 7 % less
CPU in four runs out of four, and when cyclic garbage goes changes no answer of a service.
What the caller gets behaves as the ``subprocess.Popen`` it replaces: ``pid``, ``stdout``,
``poll``, ``wait``, ``terminate``, ``kill`` and ``returncode`` (the fork server reaps its
children and reports each exit status). When the test process ends, the fork server sees its
socket close, kills any child still running, reaps them and exits; ``stop()`` returns once it
has. ``HARNESS_TEST_FORKSERVER=0`` (or a platform without ``fork`` and ``SCM_RIGHTS``) starts
every service with ``subprocess.Popen`` instead.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from pathlib import Path
from typing import IO, Any

from tests import _watchdog

ENV = "HARNESS_TEST_FORKSERVER"
ZYGOTE_ENV = "HARNESS_TEST_ZYGOTE"  # the run's zygote's socket (tests/_zygote.py)
#: what the example services import, and every command of the CLI (``python -m harness.cli``),
#: each imported in the fork server and never run there: a child runs ``harness.cli`` itself.
#: ``module:function`` also calls a cache's function once: the HTML report's template, compiled
#: (0.13 CPU-s in each CLI child that writes a report)
PRELOAD = ("httpx", "openai", "anthropic", "redis", "harness.commands.certify",
           "harness.commands.check", "harness.commands.drill", "harness.commands.explore",
           "harness.commands.export", "harness.commands.fake_provider", "harness.commands.gate",
           "harness.commands.merge", "harness.commands.replay", "harness.commands.scenarios",
           "harness.commands.serve", "harness.reports.html:_template")
#: what Python reads from the environment when it starts (besides PYTHONPATH, which a child
#: applies itself): a CLI child whose environment differs in any of them execs a fresh Python
STARTUP_PREFIXES = ("PYTHON", "LC_")
STARTUP_NAMES = ("LANG",)
MESSAGE_MAX = 1 << 20
#: the cyclic collector's thresholds of the test processes (tests/conftest.py) and of every
#: child forked here (the docstring says why)
GC_THRESHOLDS = (20_000, 50, 100)
START_TIMEOUT_S = 60.0  # the fork server's own start (the SDKs' imports) on a loaded machine
CLOSE_TIMEOUT_S = 30.0  # the fork server's end: kill, reap and exit, on a loaded machine


# -- the fork server (python -m tests._forkserver FD, or forked by the zygote) ------------------

#: what a fresh Python has before it imports anything the fork server preloads: its environment
#: (``env``), warning filters (``filters``) and ``sys.path`` (``path``); a CLI child starts
#: from these
_PRISTINE: dict[str, Any] = {"env": {}, "filters": [], "path": []}


def preload(names: list[str] | tuple[str, ...]) -> None:
    own = {str(Path(p).resolve()) for p in _pythonpath(os.environ)}
    _PRISTINE.update(env=dict(os.environ), filters=list(warnings.filters),
                     path=[p for p in sys.path[1:] if str(Path(p).resolve()) not in own])
    for name in names:
        module, _, warm = name.partition(":")
        with contextlib.suppress(ImportError):  # a child without it fails as `python` would
            imported = importlib.import_module(module)
            # a cache not warmed (a template being edited) is a child's to fill, or to fail on
            with contextlib.suppress(Exception):
                if warm:
                    getattr(imported, warm)()
    # what the imports made lives as long as the children: out of their collector's sight
    # (CPython's advice for a process that forks: no full collection walks it again in each
    # child, nor copies its pages by touching their reference counts)
    gc.collect()
    gc.freeze()


def wakeup() -> tuple[int, int]:
    """A pipe that becomes readable when a child exits (SIGCHLD): its read and write ends."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return wake_r, wake_w


def serve(sock: socket.socket) -> None:
    """Fork a child per request until the socket closes; report each child's exit status.
    When it returns, every child has been killed and reaped."""
    wake_r, wake_w = wakeup()
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        reap(children, sock)
        if sock.fileno() not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, MESSAGE_MAX, 3)
        if not message:  # the test process ended
            break
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            gc.set_threshold(*GC_THRESHOLDS)
            for fd in (wake_r, wake_w, sock.detach()):
                os.close(fd)
            _child(json.loads(message), fds)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        sock.send(json.dumps({"started": pid}).encode())
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in children:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def reap(children: set[int], sock: socket.socket | None) -> None:
    """Reap the children that exited, reporting each exit status on ``sock`` (if any)."""
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        if sock is None:
            continue
        with contextlib.suppress(OSError):
            sock.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status),
                                  "cpu": usage.ru_utime + usage.ru_stime}).encode())


def take_output(out: int) -> None:
    """In a forked child: stdin from /dev/null (not the parent's), stdout and stderr on ``out``
    (closed here)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """Become ``python script args…`` (or ``python -m module args…``): never returns."""
    code: int = 0
    module = request.get("module")
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if request["new_session"]:
            os.setsid()
        if len(fds) == 3:  # stdin, stdout, stderr of their own
            for fd, target in zip(fds, (0, 1, 2), strict=True):
                os.dup2(fd, target)
                os.close(fd)
        else:
            take_output(fds[0])
        os.chdir(request["cwd"])
        env = request["env"]
        if module is not None and not _starts_alike(env):
            os.execve(sys.executable, [sys.executable, "-m", module, *request["argv"]], env)
        os.environ.clear()
        os.environ.update(env)
        if module is None:
            script = request["argv"][0]
            sys.argv = list(request["argv"])
            sys.path[0] = str(Path(script).resolve().parent)
            runpy.run_path(script, run_name="__main__")
        else:
            _as_started(env)
            sys.argv = [module, *request["argv"]]  # run_module puts the module's file first
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        if module is not None:
            _finalize()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _pythonpath(env: dict[str, str] | os._Environ[str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _starts_alike(env: dict[str, str]) -> bool:
    """Whether a Python started with ``env`` would make the same start-up decisions as the
    fork server did (stdio encoding and buffering, warnings, hash seed, …)."""
    def startup(e: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in e.items() if k != "PYTHONPATH"
                and (k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES)}
    return startup(env) == startup(_PRISTINE["env"])


def _as_started(env: dict[str, str]) -> None:
    """In a CLI child: what ``python -m …`` would have set up before running the module:
    ``sys.path`` (the working folder, then ``PYTHONPATH``, then the installation's), the
    warning filters before any preload, and stdio as Python makes it (buffered unless
    ``PYTHONUNBUFFERED``; stderr line-buffered, ``backslashreplace``)."""
    sys.path[:] = [os.getcwd(), *_pythonpath(env), *_PRISTINE["path"]]
    warnings.filters[:] = _PRISTINE["filters"]  # type: ignore[index]  # a list at run time
    warnings._filters_mutated()  # type: ignore[attr-defined]
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    encoding = sys.__stdout__.encoding if sys.__stdout__ else "utf-8"
    errors = (sys.__stdout__.errors or "strict") if sys.__stdout__ else "strict"

    def writer(fd: int, errors: str, stderr: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "w", closefd=False)
        if unbuffered:
            return io.TextIOWrapper(raw, encoding, errors, write_through=True)
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding, errors,
                                line_buffering=stderr or raw.isatty())

    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding,
                             errors)
    # the originals too, as a started interpreter has them (typeshed marks them Final)
    sys.stdin = sys.__stdin__ = stdin  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = writer(1, errors, False)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = writer(2, "backslashreplace", True)  # type: ignore[misc]


def _finalize() -> None:
    """What Python does at its exit before the process ends: wait for the threads that are
    not daemons, then run the ``atexit`` functions."""
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()


def main(fd: int, names: list[str]) -> None:
    preload(names)
    sock = socket.socket(fileno=fd)
    sock.send(json.dumps({"ready": os.getpid()}).encode())
    serve(sock)


# -- the test process's side -------------------------------------------------------------------

class Forked:
    """A child of the fork server, with the ``subprocess.Popen`` methods the tests use."""

    def __init__(self, server: _Client, pid: int, stdout: IO[str]) -> None:
        self._server, self.pid, self.stdout = server, pid, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # not reaped yet: the pid is still this process's
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Client:
    """The connection to this process's fork server, and the exit codes it reported. With
    ``zygote`` (its socket's path) the fork server is the zygote's child, forked with the
    SDKs imported; else this process's own (``python -m tests._forkserver FD``)."""

    def __init__(self, zygote: str | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd, log = tempfile.mkstemp(prefix="harness-forkserver-", suffix=".log")
        self.log = Path(log)  # its own errors: not in a test's captured output
        self.process: subprocess.Popen[bytes] | None = None
        try:
            if zygote is None:
                self.process = subprocess.Popen(
                    [sys.executable, "-u", "-m", "tests._forkserver", str(theirs.fileno()),
                     *PRELOAD], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                    stdout=fd, stderr=fd, cwd=Path(__file__).resolve().parents[1],
                    # as the zygote's: a SIGKILL to the run's group leaves it to see its
                    # socket close and kill its children (some in sessions of their own)
                    start_new_session=True)
            else:
                _ask(zygote, theirs, fd)
        except BaseException:
            ours.close()
            self.log.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
            theirs.close()
        self.server_pid = self.process.pid if self.process is not None else None
        self.sock, self.lock, self.changed = ours, threading.Lock(), threading.Condition()
        self.started: list[int] = []
        self.exits: dict[int, int] = {}
        self.cpu = 0.0  # CPU seconds of the children reaped so far (with their own children)
        self.ready = threading.Event()
        self.closed = False
        threading.Thread(target=self._read, daemon=True, name="forkserver").start()
        if not self.ready.wait(START_TIMEOUT_S) or self.closed:
            said = self.said()
            self.close()
            raise RuntimeError(f"the tests' fork server did not start in {START_TIMEOUT_S} s: "
                               f"{said}")

    def _read(self) -> None:
        while True:
            try:
                message = self.sock.recv(MESSAGE_MAX)
            except OSError:
                message = b""
            with self.changed:
                if not message:  # the fork server exited (or this side closed)
                    self.closed = True
                    self.changed.notify_all()
                    self.ready.set()
                    return
                event = json.loads(message)
                if "exited" in event:
                    self.exits[event["exited"]] = event["code"]
                    self.cpu += float(event.get("cpu", 0.0))
                elif "started" in event:
                    self.started.append(event["started"])
                elif "ready" in event:
                    self.server_pid = event["ready"]
                self.ready.set()
                self.changed.notify_all()

    def start(self, argv: list[str], env: dict[str, str], cwd: str, new_session: bool) -> Forked:
        """``python argv…`` with stdout and stderr on one pipe."""
        read, write = os.pipe()
        try:
            pid = self.fork({"argv": argv, "env": env, "cwd": cwd, "new_session": new_session},
                            [write])
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        return Forked(self, pid, open(read, encoding="utf-8", errors="replace"))

    def fork(self, request: dict[str, Any], fds: list[int]) -> int:
        """Send one request with its descriptors (one for stdout and stderr, or stdin, stdout
        and stderr): the child's pid. The descriptors are the caller's to close."""
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
            with self.changed:
                if not self.changed.wait_for(lambda: self.started or self.closed,
                                             START_TIMEOUT_S) or not self.started:
                    raise RuntimeError(f"the tests' fork server stopped answering: {self.said()}")
                return self.started.pop(0)

    def said(self) -> str:
        """The end of the fork server's own output (its errors)."""
        try:
            return self.log.read_text("utf-8", errors="replace")[-2000:] or "(nothing)"
        except OSError as exc:
            return f"(its log is unreadable: {exc})"

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exits or self.closed, timeout)
            return self.exits.get(pid)

    def close(self) -> None:
        """End the fork server. When this returns it has killed and reaped its children: its
        end of the socket is closed, which it holds until it exits (its own is reaped too)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)  # it reads the end of its requests
        if not self._ended(CLOSE_TIMEOUT_S) and self.server_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.server_pid, signal.SIGKILL)
            self._ended(CLOSE_TIMEOUT_S)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # the reader's recv returns, if it still waits
        self.sock.close()
        if self.process is not None:
            self.process.wait(timeout=CLOSE_TIMEOUT_S)
        self.log.unlink(missing_ok=True)

    def _ended(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.closed, timeout)


def _ask(zygote: str, server: socket.socket, log: int) -> None:
    """Ask the run's zygote to fork a fork server on ``server`` with its output on ``log``
    (tests/_zygote.py); OSError when nothing listens there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as request:
        request.settimeout(START_TIMEOUT_S)
        request.connect(zygote)
        socket.send_fds(request, [b"fork"], [server.fileno(), log])


_client: list[_Client] = []
_starting = threading.Lock()


def enabled() -> bool:
    """Whether services are forked (``HARNESS_TEST_FORKSERVER`` not 0, ``fork`` and
    ``SCM_RIGHTS`` available)."""
    return os.environ.get(ENV) != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds")


def server() -> _Client | None:
    """This process's fork server (started on first use), or None when forking is off."""
    if not enabled():
        return None
    with _starting:
        if not _client:
            _client.append(connect())
            atexit.register(stop)
        return _client[0]


def connect() -> _Client:
    """A fork server forked by the run's zygote (``HARNESS_TEST_ZYGOTE``), else, when there is
    none or it does not answer, one of this process's own."""
    zygote = os.environ.get(ZYGOTE_ENV)
    if zygote:
        try:
            return _Client(zygote)
        except (OSError, RuntimeError):  # it died or never started: no worse than without it
            pass
    return _Client()


def reaped_cpu() -> float:
    """CPU seconds of this process's fork server's children reaped so far (0 before it
    started): what the test timeline charges to each test (tests/_timeline.py)."""
    return _client[0].cpu if _client else 0.0


def stop() -> None:
    """End this process's fork server, if it started: its children killed and reaped, and it
    reaped too when it is this process's own (the zygote reaps those it forked)."""
    with _starting:
        while _client:
            _client.pop().close()


def popen(argv: list[str], env: dict[str, str], *, cwd: str | Path | None = None,
          start_new_session: bool = False) -> Forked | subprocess.Popen[str]:
    """``python script args…`` with stdout and stderr on one text pipe (``.stdout``): forked
    from the fork server when ``argv[0]`` is this Python and ``argv[1]`` a script, else (or
    with the fork server off) ``subprocess.Popen``."""
    client = server() if len(argv) > 1 and argv[0] == sys.executable \
        and argv[1].endswith(".py") else None
    if client is None:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=env, cwd=cwd, text=True,
                                   start_new_session=start_new_session)
        # not forgotten when it ends: a process gone is nothing for the watchdog to stop
        _watchdog.watch(process.pid, group=start_new_session)
        return process
    return client.start(argv[1:], env, str(cwd or os.getcwd()), start_new_session)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
