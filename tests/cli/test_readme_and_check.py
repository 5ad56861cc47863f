"""The README's two commands, CI's use of them, and the main job's exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section)


def test_the_quick_start_is_exactly_two_commands_and_ci_runs_the_second() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("failover-harness check")
    assert "pytest" in commands[1] and "[test]" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text("utf-8")


def test_check_passes_on_the_embedded_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "pass" and report["store"] == "sqlite"
    assert {c["name"] for c in report["checks"]} >= {"double_click", "timeout_unknown"}


@pytest.mark.postgres
def test_check_passes_on_postgresql(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--db", pg_dsn, "--quiet"]) == 0
    assert "7 of 7 promises hold" in capsys.readouterr().out


def test_check_refuses_an_unknown_store_url_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--db", "mysql://localhost/jobs"]) == 2
    err = capsys.readouterr().err
    assert "sqlite:///" in err and "Traceback" not in err


def test_an_unknown_option_exits_2_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--no-such-flag"])
    assert exit_.value.code == 2
    assert "--help" in capsys.readouterr().err
