"""`explore` with no Redis exits 2, as documented, and leaves no empty report folder behind:
bad input writes nothing (issue 34)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def explore_without_redis() -> list[str]:
    examples = ROOT / "examples"
    return ["explore", "--target", "http://127.0.0.1:8811", "--target-profile",
            str(examples / "redis-lock.profile.yaml"), "--through",
            f"redis://127.0.0.1:{closed_port()}/0", "--workload", "double-click",
            "--service-cmd", f"{sys.executable} {examples / 'redis_lock_service.py'} "
            "--port 8811 --redis {proxy}"]


def test_explore_without_redis_exits_2_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(explore_without_redis()) == 2
    assert "cannot reach the storage server" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # not even reports/


def test_an_earlier_report_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    earlier = tmp_path / "reports" / "20260101T000000.000Z"
    earlier.mkdir(parents=True)
    (earlier / "results.json").write_text("{}")
    assert main(explore_without_redis()) == 2
    assert list((tmp_path / "reports").iterdir()) == [earlier]
