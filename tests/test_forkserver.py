"""tests/_forkserver.py: a service forked from the fork server is a process of its own that
runs the script as ``python script args…`` would: its own pid and session, the environment,
folder and arguments asked for, its output on the pipe, its exit status, and signals."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests import _forkserver

SCRIPT = """\
import json, os, signal, sys
import helper  # beside the script: sys.path[0] is the script's folder
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                  "other": os.environ.get("NOT_PASSED"), "pid": os.getpid(),
                  "sid": os.getsid(0), "name": __name__, "helper": helper.VALUE}), flush=True)
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


def test_with_the_fork_server_off_it_is_a_plain_popen(script: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_forkserver.ENV, "0")
    process = _forkserver.popen([sys.executable, str(script), "0"], dict(os.environ))
    assert isinstance(process, _forkserver.subprocess.Popen)
    assert process.wait(timeout=60) == 0
    assert process.stdout is not None
    process.stdout.close()
