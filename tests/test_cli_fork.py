"""tests/_cli.py: ``python -m module`` forked from the fork server behaves as ``python -m module``
started afresh: the same arguments, ``sys.path``, working folder, environment, stdio (buffering,
encoding, errors), warning filters, ``__main__``, the threads it leaves waited for and its
``atexit`` functions run at its end, stdout and stderr apart, its exit status; a process of its
own (pid, signals). An environment that changes how Python starts execs a fresh Python."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _cli, _forkserver

PROBE = """\
import atexit, json, os, signal, sys, threading, warnings
import beside_probe, on_pythonpath

def streams():
    return {name: [s.encoding, s.errors, s.line_buffering, s.write_through]
            for name, s in (("stdout", sys.stdout), ("stderr", sys.stderr))}

print(json.dumps({
    "argv": sys.argv, "path": sys.path[:2], "cwd": os.getcwd(), "name": __name__,
    "spec": __spec__.name, "probe_env": os.environ.get("PROBE"), "stdin": sys.stdin.read(),
    "streams": streams(), "same_dunder": sys.stdout is sys.__stdout__,
    "filters": [repr(f) for f in warnings.filters], "hash": hash("failover"),
    "helpers": [beside_probe.VALUE, on_pythonpath.VALUE], "pid": os.getpid(),
}))
print("to stderr", file=sys.stderr)
atexit.register(lambda: print("atexit ran", flush=True))
later = threading.Thread(target=lambda: (threading.Event().wait(0.2), print("thread done")))
later.start()  # not a daemon: Python waits for it before the atexit functions
if sys.argv[1] == "wait":
    print("waiting", flush=True)
    signal.pause()
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def probe(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder with the probe module and its helper, and an environment with PYTHONPATH."""
    (tmp_path / "probe_cli.py").write_text(PROBE, "utf-8")
    (tmp_path / "beside_probe.py").write_text("VALUE = 'cwd'\n", "utf-8")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "on_pythonpath.py").write_text("VALUE = 'pythonpath'\n", "utf-8")
    env = {**os.environ, "PROBE": "yes", "PYTHONPATH": str(extra)}
    return tmp_path, env


def _fresh(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe_cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _without_pid(out: str, seeded: bool = False) -> tuple[dict[str, object], list[str]]:
    """What the probe printed but its pid, and its string hashes unless the hash seed was
    set: a fresh Python draws a seed of its own, a forked one has the fork server's."""
    first, *rest = out.splitlines()
    seen = json.loads(first)
    seen.pop("pid")
    if not seeded:
        seen.pop("hash")
    return seen, rest


@pytest.mark.parametrize("env_change", [{}, {"PYTHONUNBUFFERED": ""}, {"PYTHONHASHSEED": "7"}],
                         ids=["same-start", "buffered", "another-hash-seed"])
def test_a_forked_module_runs_as_python_m_would(
        probe: tuple[Path, dict[str, str]], env_change: dict[str, str]) -> None:
    """Unbuffered or not (the suite's environment may set PYTHONUNBUFFERED), and another hash
    seed (which only a fresh Python can have: exec'd, its hashes the seed's)."""
    folder, env = probe
    env = {k: v for k, v in {**env, **env_change}.items() if v}
    forked = _cli.run(["3"], cwd=folder, env=env, timeout=120, module="probe_cli")
    fresh = _fresh(["3"], folder, env)
    assert (forked.returncode, fresh.returncode) == (3, 3), forked.stderr + fresh.stderr
    seeded = "PYTHONHASHSEED" in env
    assert _without_pid(forked.stdout, seeded) == _without_pid(fresh.stdout, seeded), (
        forked, fresh)
    assert forked.stderr == fresh.stderr == "to stderr\n"
    seen, rest = _without_pid(forked.stdout)
    assert seen["argv"] == [str(folder / "probe_cli.py"), "3"]
    assert seen["path"] == [str(folder), str(folder / "extra")]
    assert (seen["name"], seen["spec"], seen["probe_env"], seen["stdin"]) == (
        "__main__", "probe_cli", "yes", "")
    assert rest == ["thread done", "atexit ran"]


def test_a_forked_module_is_a_process_of_its_own_stopped_by_a_signal(
        probe: tuple[Path, dict[str, str]]) -> None:
    folder, env = probe
    process = _cli.popen(["wait"], cwd=folder, env=env, module="probe_cli",
                         start_new_session=True)
    if _forkserver.enabled():
        assert isinstance(process, _cli.CliProcess)
    assert process.stdout is not None and process.stderr is not None
    seen = json.loads(process.stdout.readline())
    assert seen["pid"] == process.pid != os.getpid() and os.getsid(process.pid) == process.pid
    assert process.stdout.readline() == "waiting\n" and process.poll() is None
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == -signal.SIGTERM
    process.stdout.close()
    process.stderr.close()


def test_run_kills_a_forked_module_at_its_timeout_and_merges_stderr_when_asked(
        probe: tuple[Path, dict[str, str]]) -> None:
    folder, env = probe
    with pytest.raises(subprocess.TimeoutExpired):
        _cli.run(["wait"], cwd=folder, env=env, timeout=3, module="probe_cli")
    merged = _cli.run(["0"], cwd=folder, env=env, timeout=120, module="probe_cli",
                      stderr=_cli.STDOUT)
    assert merged.returncode == 0 and merged.stderr is None
    assert "to stderr\n" in merged.stdout and merged.stdout.endswith("atexit ran\n")
    quiet = _cli.run(["0"], cwd=folder, env=env, timeout=120, module="probe_cli",
                     stdout=_cli.DEVNULL)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, None, "to stderr\n")


def test_the_cli_forked_answers_as_the_cli_started_afresh(tmp_path: Path) -> None:
    """harness/cli.py as ``__main__``: its help, a usage error (exit 2, the fix on stderr)."""
    for args in (["--help"], ["drill", "--target", "http://127.0.0.1:9"]):
        forked = _cli.run(args, cwd=tmp_path, timeout=120)
        fresh = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.returncode == 2 and "fix:" in forked.stderr
