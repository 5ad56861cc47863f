"""``python -m harness.cli …`` as a process of its own, without paying for its imports each time.

The suite runs the CLI as a subprocess about ninety times (drills, ``serve``, ``check``,
``scenarios``, ``fake-provider``): each imported harness and its libraries before doing anything,
0.4-1.2 CPU-s. Here the process is forked from the test process's fork server
(tests/_forkserver.py), which imported the commands' modules once: the child is still a process
of its own (its pid, session, environment, working folder, stdin from ``/dev/null``, stdout and
stderr on pipes of their own, exit status, signals), ``sys.path``, stdio and warning filters
set up as ``python -m`` sets them, and ``harness/cli.py`` itself runs as ``__main__``, as
``python -m harness.cli`` runs it; at its end it waits for its threads and runs its ``atexit``
functions, as Python does. An environment that would change how Python starts (a ``PYTHON…``
variable other than ``PYTHONPATH``, ``LANG``, ``LC_…``) makes the child exec a fresh Python
instead. One difference is left: without ``PYTHONHASHSEED`` a fresh Python draws a hash seed of
its own, and the forked ones share the fork server's (a seed drawn anew at every run).
``HARNESS_TEST_FORKSERVER=0`` runs ``subprocess`` instead.

What is about the CLI's own start (signals while it imports, ``--help``'s cost, a closed
pipe, an install without extras) keeps running ``python -m harness.cli`` itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from tests import _forkserver

MODULE = "harness.cli"
PIPE, DEVNULL, STDOUT = subprocess.PIPE, subprocess.DEVNULL, subprocess.STDOUT
Output = int | IO[Any]  # PIPE, DEVNULL, STDOUT, a descriptor or an open file


class CliProcess(_forkserver.Forked):
    """A forked ``python -m harness.cli``, with the ``subprocess.Popen`` methods the tests use."""

    def __init__(self, server: Any, pid: int, args: list[str], stdout: IO[str] | None,
                 stderr: IO[str] | None) -> None:
        super().__init__(server, pid, stdout)  # type: ignore[arg-type]
        self.args, self.stderr = args, stderr
        self._readers: list[threading.Thread] | None = None
        self._output: dict[str, str] = {}

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        """Read stdout and stderr to their end (then closed) and wait for the exit, within
        ``timeout`` (``subprocess.TimeoutExpired`` after it: the process is left running, and
        a later call goes on reading where this one stopped)."""
        if self._readers is None:
            self._readers = [threading.Thread(target=self._read, args=(name, stream),
                                              daemon=True)
                             for name, stream in (("out", self.stdout), ("err", self.stderr))
                             if stream is not None]
            for r in self._readers:
                r.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for r in self._readers:
            r.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if r.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._output.get("out"), self._output.get("err")

    def _read(self, name: str, stream: IO[str]) -> None:
        with stream:  # read to its end: closed, as Popen.communicate does
            self._output[name] = stream.read()


def popen(args: list[str], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
          stdout: Output = PIPE, stderr: Output = PIPE, start_new_session: bool = False,
          module: str = MODULE) -> CliProcess | subprocess.Popen[str]:
    """``python -m harness.cli args…`` (``module``: another one): stdout ``PIPE``, ``DEVNULL``
    or a file (an open file or a descriptor); stderr the same or ``STDOUT``; text, stdin from
    ``/dev/null``."""
    env = dict(os.environ if env is None else env)
    cwd = str(cwd or os.getcwd())
    server = _forkserver.server()
    if server is None:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                                stdin=DEVNULL, stdout=stdout, stderr=stderr, text=True,
                                start_new_session=start_new_session)
    ours: list[IO[str] | None] = []
    theirs: list[int] = []
    try:
        theirs.append(os.open(os.devnull, os.O_RDONLY))
        for choice in (stdout, stderr):
            if choice == STDOUT:
                theirs.append(theirs[1])
                ours.append(None)
            elif choice == DEVNULL:
                theirs.append(os.open(os.devnull, os.O_WRONLY))
                ours.append(None)
            elif choice == PIPE:
                read, write = os.pipe()
                theirs.append(write)
                ours.append(open(read, encoding="utf-8", errors="replace"))  # noqa: SIM115
            else:  # a file of the caller's
                theirs.append(os.dup(choice if isinstance(choice, int) else choice.fileno()))
                ours.append(None)
        pid = server.fork({"module": module, "argv": list(args), "env": env, "cwd": cwd,
                           "new_session": start_new_session}, theirs)
    except BaseException:
        for stream in ours:
            if stream is not None:
                stream.close()
        raise
    finally:
        for fd in set(theirs):
            os.close(fd)
    return CliProcess(server, pid, [sys.executable, "-m", module, *args], ours[0], ours[1])


def run(args: list[str], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None, stdout: Output = PIPE, stderr: Output = PIPE,
        module: str = MODULE) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, harness.cli, *args], capture_output=True, text=True)``:
    on ``timeout`` the process is killed and ``subprocess.TimeoutExpired`` raised."""
    proc = popen(args, cwd=cwd, env=env, stdout=stdout, stderr=stderr, module=module)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.wait()
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, code, out, err)
