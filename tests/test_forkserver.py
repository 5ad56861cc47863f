"""tests/_forkserver.py: a service forked from the fork server is a process of its own that
runs the script as ``python script args…`` would: its own pid and session, the environment,
folder and arguments asked for, its output on the pipe, its exit status, and signals.
tests/_zygote.py: a worker's fork server is forked by the run's zygote, with its imports; a
zygote that is not there or does not answer leaves the worker a fork server of its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import _forkserver, _zygote

ROOT = Path(__file__).resolve().parents[1]
PRELOAD = ("wave",)  # a module nothing here imports: a service sees it only if preloaded

SCRIPT = """\
import gc, json, os, signal, sys
import helper  # beside the script: sys.path[0] is the script's folder
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                  "other": os.environ.get("NOT_PASSED"), "pid": os.getpid(),
                  "sid": os.getsid(0), "name": __name__, "helper": helper.VALUE,
                  "ppid": os.getppid(), "preloaded": "wave" in sys.modules,
                  "gc": gc.get_threshold()}), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if sys.argv[1] == "wait":
    print("waiting", flush=True)
    signal.pause()
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    (tmp_path / "helper.py").write_text("VALUE = 'beside'\n")
    path = tmp_path / "probe_service.py"
    path.write_text(SCRIPT)
    return path


def test_a_forked_service_runs_its_script_as_python_would(script: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOT_PASSED", "1")
    monkeypatch.delenv(_forkserver.ENV, raising=False)  # forked even in a run that set it off
    work = tmp_path / "work"
    work.mkdir()
    process = _forkserver.popen([sys.executable, str(script), "3"], {"PROBE": "yes"}, cwd=work,
                                start_new_session=True)
    assert isinstance(process, _forkserver.Forked)
    assert process.wait(timeout=30) == 3 and process.poll() == 3
    assert process.stdout is not None
    first, second = process.stdout.read().splitlines()
    process.stdout.close()
    seen = json.loads(first)
    assert seen["argv"] == [str(script), "3"] and seen["cwd"] == str(work)
    assert (seen["env"], seen["other"]) == ("yes", None)
    assert seen["pid"] == process.pid != os.getpid()
    assert seen["sid"] == process.pid  # a session of its own
    assert (seen["name"], seen["helper"]) == ("__main__", "beside")
    assert second == "to stderr"
    # the one setting that differs from a fresh Python's (tests/_forkserver.py says why)
    assert tuple(seen["gc"]) == _forkserver.GC_THRESHOLDS != (700, 10, 10)


def test_a_forked_service_is_stopped_by_a_signal(script: Path) -> None:
    process = _forkserver.popen([sys.executable, str(script), "wait"], dict(os.environ))
    assert process.stdout is not None
    lines = iter(process.stdout)
    assert next(lines).startswith("{") and next(lines) == "to stderr\n"
    assert next(lines) == "waiting\n"
    assert process.poll() is None
    with pytest.raises(_forkserver.subprocess.TimeoutExpired):
        process.wait(timeout=0.01)
    process.terminate()
    assert process.wait(timeout=30) == -signal.SIGTERM
    process.terminate()  # already gone: nothing happens
    process.stdout.close()


def test_an_error_in_the_script_is_its_exit_status_and_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken_service.py"
    broken.write_text("raise RuntimeError('the service broke')\n")
    process = _forkserver.popen([sys.executable, str(broken)], dict(os.environ))
    assert process.wait(timeout=30) == 1
    assert process.stdout is not None
    out = process.stdout.read()
    process.stdout.close()
    assert "Traceback" in out and "RuntimeError: the service broke" in out, out


def test_a_reaped_service_s_cpu_is_reported_to_its_test_process(tmp_path: Path) -> None:
    """The fork server reports each exit with the child's CPU (``wait4``): the timeline
    charges a service to the test it ran in, not to "outside any test"."""
    busy = tmp_path / "busy_service.py"
    busy.write_text("import time\nend = time.process_time() + 0.3\n"
                    "while time.process_time() < end:\n    pass\n")
    client = _forkserver._Client()
    try:
        before = client.cpu
        process = client.start([str(busy)], dict(os.environ), str(tmp_path), True)
        assert process.wait(timeout=30) == 0
        assert process.stdout is not None
        process.stdout.close()
        assert 0.3 <= client.cpu - before < 30, client.cpu - before
    finally:
        client.close()


def test_a_preloaded_module_function_is_called_once_so_children_inherit_its_cache() -> None:
    """``module:function`` in the preload list imports the module and calls the function
    (the report template's cache); a name without one is only imported. In a Python of its
    own: ``preload`` freezes that process's objects."""
    probe = ("import sys, platform; from tests import _forkserver; "
             "_forkserver.preload(['platform:uname', 'wave', 'no_such_module_here:f']); "
             "print(platform._uname_cache is not None, 'wave' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"], done.stdout


def test_with_the_fork_server_off_it_is_a_plain_popen(script: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_forkserver.ENV, "0")
    process = _forkserver.popen([sys.executable, str(script), "0"], dict(os.environ))
    assert isinstance(process, _forkserver.subprocess.Popen)
    assert process.wait(timeout=60) == 0
    assert process.stdout is not None
    process.stdout.close()


# -- the zygote --------------------------------------------------------------------------------

def _parent(pid: int) -> int | None:
    """The parent pid of a running process (/proc), None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def zygote() -> Iterator[_zygote.Zygote]:
    started = _zygote.Zygote(PRELOAD)
    yield started
    started.stop()


@pytest.fixture
def light_preload(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork server of the test process's own imports only ``PRELOAD``: a quick start."""
    monkeypatch.setattr(_forkserver, "PRELOAD", PRELOAD)


def _ends(client: _forkserver._Client, script: Path, cwd: Path, code: int) -> dict[str, object]:
    """Run ``script code`` through ``client``: what it printed first, after its exit."""
    process = client.start([str(script), str(code)], dict(os.environ), str(cwd), True)
    assert process.wait(timeout=60) == code
    assert process.stdout is not None
    with process.stdout:
        seen: dict[str, object] = json.loads(process.stdout.readline())
    return seen


def test_the_zygote_forks_each_worker_s_fork_server_with_its_imports(
        zygote: _zygote.Zygote, script: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_forkserver.ZYGOTE_ENV, zygote.path)
    first, second = _forkserver.connect(), _forkserver.connect()
    try:
        assert first.process is None and first.server_pid is not None
        assert second.server_pid not in (None, first.server_pid)
        assert _parent(first.server_pid) == _parent(second.server_pid) == zygote.process.pid
        seen = _ends(first, script, tmp_path, 4)
        assert seen["ppid"] == first.server_pid and seen["argv"] == [str(script), "4"]
        assert seen["preloaded"] is True  # imported by the zygote only: inherited
    finally:
        first.close()
        second.close()
    assert zygote.stop() is None  # it ended when asked, and said nothing


@pytest.mark.parametrize("via", ["zygote", "own"])
def test_close_returns_once_the_fork_server_and_its_services_are_gone(
        via: str, zygote: _zygote.Zygote, script: Path, light_preload: None) -> None:
    client = _forkserver._Client(zygote.path if via == "zygote" else None)
    server = client.server_pid
    assert server is not None and (client.process is None) == (via == "zygote")
    service = client.start([str(script), "wait"], dict(os.environ), os.getcwd(), True)
    assert service.stdout is not None
    assert "waiting\n" in iter(service.stdout.readline, "")
    client.close()
    assert service.stdout.read() == ""  # no process holds its pipe any more
    service.stdout.close()
    assert not _running(service.pid)  # killed and reaped
    assert zygote.stop() is None  # it reaps the fork servers that ended: this one had
    assert not _running(server)


@pytest.mark.parametrize("zygote_is", ["absent", "killed"])
def test_a_worker_without_a_live_zygote_starts_its_own_fork_server(
        zygote_is: str, script: Path, tmp_path: Path, light_preload: None,
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    with contextlib.ExitStack() as clients:
        path, before = str(tmp_path / "no-zygote"), None
        if zygote_is == "killed":
            zygote: _zygote.Zygote = request.getfixturevalue("zygote")
            path, before = zygote.path, _forkserver._Client(zygote.path)
            clients.callback(before.close)
            zygote.process.kill()
            zygote.process.wait(timeout=60)
        monkeypatch.setenv(_forkserver.ZYGOTE_ENV, path)
        client = _forkserver.connect()
        clients.callback(client.close)
        assert client.process is not None and client.server_pid == client.process.pid
        assert _ends(client, script, tmp_path, 0)["ppid"] == client.process.pid
        if before is not None:  # the fork server it forked lives on: its worker's, not its own
            assert _ends(before, script, tmp_path, 5)["ppid"] == before.server_pid


def test_a_zygote_that_ends_without_forking_leaves_the_worker_its_own(
        tmp_path: Path, light_preload: None, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener, \
            ThreadPoolExecutor(1) as pool:
        listener.bind(path)
        listener.listen(1)
        listener.settimeout(60)
        monkeypatch.setenv(_forkserver.ZYGOTE_ENV, path)
        connecting = pool.submit(_forkserver.connect)
        conn, _ = listener.accept()
        with conn:
            message, fds, _, _ = socket.recv_fds(conn, 64, 2)
        assert message == b"fork" and len(fds) == 2
        for fd in fds:  # it asked, the zygote took the request and ended
            os.close(fd)
        client = connecting.result(timeout=120)
    try:
        assert client.process is not None
    finally:
        client.close()


def test_under_xdist_a_worker_s_fork_server_is_the_run_s_zygote_s_child() -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ or not _forkserver.enabled():
        pytest.skip("only an xdist worker with the fork server on has the run's zygote")
    assert os.environ.get(_forkserver.ZYGOTE_ENV), "the controller started no zygote"
    server = _forkserver.server()
    assert server is not None and server.process is None and server.server_pid is not None
    parent = _parent(server.server_pid)
    assert parent is not None and parent != os.getpid()
    assert b"tests._zygote" in Path(f"/proc/{parent}/cmdline").read_bytes()
