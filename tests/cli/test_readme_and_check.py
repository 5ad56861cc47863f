"""The README's two commands, CI's use of them, and the main job (`check`) end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.reports.schema import validate_results

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


def check_args(ws: Path, *extra: str) -> list[str]:
    return ["check", "--providers", str(ws / "providers.yaml"), "--scenarios",
            str(ws / "scenarios"), "--report-dir", str(ws / "reports"), *extra]


def test_check_runs_scenarios_matrix_certification_and_gate_offline(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check_args(workspace, "--json")) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # stdout holds the document alone
    assert "check: PASS (exit 0)" in captured.err  # the live lines went to stderr
    validate_results(report)
    assert report["schema"] == "failover-harness/results@2" and report["verdict"] == "pass"
    events = report["events"]
    verdicts = {e["scenario"]: e["verdict"] for e in events if e["type"] == "scenario_run"}
    assert verdicts["out_of_order_completion"] == "passed"
    assert verdicts["triple_click_across_replicas"] == "not_applicable"
    matrix = next(e for e in events if e["type"] == "detection_matrix")
    for target in matrix["targets"][1:]:
        assert any(c["target"] == target and c["verdict"] == "failed" for c in matrix["cells"])
    assert not any(c["target"] == "reference" and c["verdict"] == "failed"
                   for c in matrix["cells"])
    certs = {e["provider"]: (e["verdict"], e["outcome"])
             for e in events if e["type"] == "certification"}
    assert certs == {"openai-primary": ("eligible", "pass"),
                     "anthropic-fallback": ("eligible", "pass"),
                     "local-gateway": ("ineligible", "skip")}  # a manual link: not gated
    gate = next(e for e in events if e["type"] == "gate")
    assert gate["verdict"] == "pass" and gate["links_checked"] == 2
    latest = workspace / "reports" / "latest"
    assert sorted(p.name for p in latest.iterdir()) == [
        "index.html", "junit.xml", "results.json", "summary.md"]
    assert json.loads((latest / "results.json").read_text()) == report
    assert (workspace / "providers.lock.json").exists()


def test_check_fails_when_an_auto_fallback_is_ineligible(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    providers = workspace / "providers.yaml"
    text = providers.read_text("utf-8").replace(
        "{provider: local-gateway, failover: manual}", "{provider: local-gateway, failover: auto}")
    providers.write_text(text, "utf-8")
    assert main(check_args(workspace)) == 1
    out = capsys.readouterr().out
    assert "FAILED: provider 'local-gateway', contract 'ticket_triage'" in out
    assert "then run: failover-harness certify" in out
    assert "check: FAIL (exit 1)" in out


def test_check_without_certifying_is_unknown_when_the_lock_is_missing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check_args(workspace, "--no-certify", "--quiet")) == 3
    out = capsys.readouterr().out
    assert "MISSING: provider 'openai-primary'" in out and "check: UNKNOWN (exit 3)" in out
    assert "PASS      double_click" not in out  # --quiet: only problems and the verdict


@pytest.mark.postgres
def test_check_runs_the_scenarios_on_postgresql(
    workspace: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check_args(workspace, "--db", pg_dsn, "--no-certify", "--json")) == 3
    report = json.loads(capsys.readouterr().out)
    events = report["events"]
    assert {e["verdict"] for e in events if e["type"] == "scenario_run"} == {
        "passed", "not_applicable"}
    assert next(e for e in events if e["type"] == "gate")["verdict"] == "unknown"


def test_check_refuses_a_missing_providers_file_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--providers", str(tmp_path / "nope.yaml"),
                 "--report-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and "Traceback" not in err
    assert not (tmp_path / "latest").exists()


def test_an_unknown_option_exits_2_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--no-such-flag"])
    assert exit_.value.code == 2
    assert "--help" in capsys.readouterr().err
