"""Ctrl-C and SIGTERM end a drill within 2 s whatever the target is doing, and close the fakes'
ports; a signal while the CLI starts exits 130/143 with no traceback (issue 33). The CLI is
what is tested here, so it runs as a process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.hostile.probe import Answer, Probe

ROOT = Path(__file__).resolve().parents[3]


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
            _out, err = proc.communicate(timeout=10)
            took = time.monotonic() - sent
        finally:
            proc.kill()
    assert proc.returncode == code, err
    assert took < 2.0, took
    assert "Traceback" not in err
    assert not listening(env["PRIMARY_PORT"]) and not listening(env["FALLBACK_PORT"])
    assert f"still points at an earlier run ({earlier.name})" in err  # said, not left stale


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("after_s", [0.05, 0.3, 0.8])
def test_a_signal_while_the_cli_starts_prints_no_traceback(
        drill_env: tuple[Path, dict[str, str]], tmp_path: Path, signum: int, code: int,
        after_s: float) -> None:
    profile, env = drill_env
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe:  # the run is never over by itself
        proc = start(["drill", "--target", probe.url, "--target-profile", str(profile),
                      "--report-dir", str(tmp_path / "reports")], env, tmp_path)
        try:
            time.sleep(after_s)  # the moment of the signal is what is under test
            proc.send_signal(signum)
            _out, err = proc.communicate(timeout=10)
        finally:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
