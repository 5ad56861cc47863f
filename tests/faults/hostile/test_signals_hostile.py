"""Ctrl-C and SIGTERM end a drill within 2 s whatever the target is doing, and close the fakes'
ports; a signal while the CLI starts exits 130/143 with no traceback (issue 33). The CLI is
what is tested here, so it runs as a process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.faults.hostile.conftest import SECRET
from tests.faults.hostile.probe import Answer, Probe, Request, call_provider, sized

ROOT = Path(__file__).resolve().parents[3]
#: the promise: the handler shuts every connection, the run unwinds, the process ends without
#: the interpreter's teardown, and 1 s after the signal (cli.GRACE_S) whatever still runs
BOUND_S = 2.0


def start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=cwd,
                            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def listening(port: str) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", int(port))) == 0


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_a_drill_stuck_on_a_slow_target_within_two_seconds(
        drill_env: tuple[Path, dict[str, str]], tmp_path: Path, signum: int, code: int) -> None:
    profile, env = drill_env
    earlier = tmp_path / "reports" / "20200101T000000.000Z"  # an earlier run's (PASS) report
    earlier.mkdir(parents=True)
    (tmp_path / "reports" / "latest").symlink_to(earlier.name)
    os.utime(earlier, (0, 0))
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe:  # headers at 1 byte a second
        proc = start(["drill", "--target", probe.url, "--target-profile", str(profile),
                      "--drills", "control,hang,late", "--trials", "2",
                      "--report-dir", str(tmp_path / "reports")], env, tmp_path)
        try:
            assert probe.arrived.wait(30), "the drill never submitted"
            assert listening(env["PRIMARY_PORT"])
            sent = time.monotonic()
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=10)
            took = time.monotonic() - sent
        finally:  # gone and reaped, whatever happened (no process left to a later test)
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert took < BOUND_S, took
    assert "Traceback" not in err and SECRET not in err + out
    assert not listening(env["PRIMARY_PORT"]) and not listening(env["FALLBACK_PORT"])
    assert f"still points at an earlier run ({earlier.name})" in err  # said, not left stale


def catches(pid: int, signum: int) -> bool:
    """The process has a handler of its own for ``signum`` (Linux: SigCgt in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("SigCgt:")), 16)
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("after_s", [0.0, 0.2, 0.6])
def test_a_signal_while_the_cli_starts_prints_no_traceback(
        drill_env: tuple[Path, dict[str, str]], tmp_path: Path, signum: int, code: int,
        after_s: float) -> None:
    """From the moment the CLI's first line ran (its early handlers are in place: before
    that, the interpreter itself is starting), through the imports, to the run."""
    profile, env = drill_env
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe:  # the run is never over by itself
        proc = start(["drill", "--target", probe.url, "--target-profile", str(profile),
                      "--report-dir", str(tmp_path / "reports")], env, tmp_path)
        try:
            deadline = time.monotonic() + 30
            while not catches(proc.pid, signal.SIGTERM):  # polled: the moment is under test
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.001)
            time.sleep(after_s)  # the moment of the signal is what is under test
            proc.send_signal(signum)
            _out, err = proc.communicate(timeout=10)
        finally:  # gone and reaped, whatever happened (no process left to a later test)
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err


def _high_water(pid: int) -> int:
    """The process's peak resident memory in bytes (0 once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), None)
    return int(line.split()[1]) * 1024 if line else 0


def run_measured(args: list[str], cwd: Path, timeout_s: float,
                 env: dict[str, str] | None = None) -> tuple[int, int, str]:
    """(exit code, peak RSS in bytes, stderr) of the CLI run with ``args``, waited for with
    its own rusage (its output goes to files: a full pipe would stop it)."""
    with (cwd / "out.txt").open("w") as out, (cwd / "err.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=cwd,
                                env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
                                stdout=out,
                                stderr=err)
    deadline, peak = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline:
        # the child's own high-water mark (VmHWM: its memory since exec); wait4's ru_maxrss
        # would also count the pages of the process that forked it (an xdist worker)
        peak = max(peak, _high_water(proc.pid))
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, peak, (cwd / "err.txt").read_text()
        time.sleep(0.05)  # polling the child's end (wait4 with a timeout does not exist)
    proc.kill()
    proc.wait()
    raise AssertionError(f"still running after {timeout_s} s")


CHECK_PROFILE = """\
name: huge
capabilities: [jobs]
operations:
  create_job: {method: POST, path: /jobs, key_header: Idempotency-Key}
  get_job: {method: GET, path: "/jobs/{job_id}"}
"""


def test_check_with_50_mb_answers_stays_under_300_mb(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(CHECK_PROFILE, encoding="utf-8")
    (tmp_path / "t.yaml").write_text("tok-alice-123456: alice\ntok-bob-1234567: bob\n")
    def answer(request: Request) -> Answer:  # every create answers 50 MB
        if request.method == "GET":  # the preflight's looks: the service is there
            return Answer.json({"code": "not_found"}, 404 if "/jobs/" in request.target else 200)
        return Answer(201, {"Content-Type": "application/json"},
                      lambda: sized(50 * 1024 * 1024), chunked=True)

    with Probe(answer) as probe:
        code, peak, err = run_measured(
            ["check", "--target", probe.url, "--target-profile", str(tmp_path / "p.yaml"),
             "--tokens-file", str(tmp_path / "t.yaml"), "--no-certify", "--scenarios",
             str(ROOT / "scenarios" / "double_click.yaml"),
             "--report-dir", str(tmp_path / "reports")], tmp_path, 60)
    assert code == 3, err  # no create was answered within the limit: unknown, never a pass
    assert "Traceback" not in err and "internal error" not in err
    print(f"check, 50 MB answers: exit {code}, peak RSS {peak / 2**20:.0f} MB")
    assert peak < 300 * 1024 * 1024, f"peak RSS {peak / 2**20:.0f} MB"


def test_ctrl_c_ends_check_stuck_on_slow_creates_within_two_seconds(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(CHECK_PROFILE, encoding="utf-8")
    (tmp_path / "t.yaml").write_text("tok-alice-123456: alice\ntok-bob-1234567: bob\n")
    created = threading.Event()

    def answer(request: Request) -> Answer:  # creates answer their headers at 1 byte a second
        if request.method == "GET":
            return Answer.json({"code": "not_found"}, 404 if "/jobs/" in request.target else 200)
        created.set()
        return Answer(head_byte_s=1.0)

    with Probe(answer) as probe:
        proc = start(["check", "--target", probe.url, "--target-profile",
                      str(tmp_path / "p.yaml"), "--tokens-file", str(tmp_path / "t.yaml"),
                      "--no-certify", "--scenarios", str(ROOT / "scenarios" / "double_click.yaml"),
                      "--report-dir", str(tmp_path / "reports")], {}, tmp_path)
        try:
            assert created.wait(30), "check never created a job"
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=10)
            took = time.monotonic() - sent
        finally:  # gone and reaped, whatever happened (no process left to a later test)
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert took < BOUND_S, took
    assert "Traceback" not in err


def test_a_drill_watching_50_mb_answers_at_concurrency_8_stays_under_300_mb(
        drill_env: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    profile, env = drill_env

    def answer(request: Request) -> Answer:  # each look at a job: 50 MB
        if request.method == "POST":
            call_provider(env["PRIMARY_PORT"], json.loads(request.body)["text"])
            return Answer.json({"id": "job-1"}, 201)
        return Answer(200, {"Content-Type": "application/json"},
                      lambda: sized(50 * 1024 * 1024), chunked=True)

    with Probe(answer) as probe:
        started = time.monotonic()
        code, peak, err = run_measured(
            ["drill", "--target", probe.url, "--target-profile", str(profile), "--drills",
             "control", "--trials", "8", "--concurrency", "8",
             "--report-dir", str(tmp_path / "reports")], tmp_path, 60, env)
        took = time.monotonic() - started
    print(f"drill, 8 intents watching 50 MB answers: exit {code}, peak RSS "
          f"{peak / 2**20:.0f} MB in {took:.1f} s")
    assert code == 3, err  # the job could not be read: unknown, naming the size
    out = (tmp_path / "out.txt").read_text()
    assert "over the limit of 1,048,576 bytes" in out
    assert SECRET not in out + err
    assert peak < 300 * 1024 * 1024
    assert took < 30
