"""``failover-harness scenarios`` and ``replay``: exit codes 0/1/2/3, the violation report, the
replay command it prints, and run folders."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.scenarios.targets.base import redact
from tests.scenarios.conftest import SCENARIOS_DIR

OOO = str(SCENARIOS_DIR / "out_of_order_completion.yaml")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_all_scenarios_hold_on_the_reference_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["scenarios", "run", str(SCENARIOS_DIR), "--report-dir",
                         str(tmp_path)], capsys)
    assert code == 0, out
    assert "12 passed, 0 violated, 0 unknown, 1 not applicable" in out
    assert "N/A       triple_click_across_replicas: needs replicas" in out
    folders = sorted((tmp_path / "latest" / "runs").iterdir())
    assert len(folders) == 12
    assert all(re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-[a-z_]+", f.name) for f in folders)
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == [
            "history.jsonl", "results.json", "scenario.yaml", "schedule.jsonl"]
        results = json.loads((folder / "results.json").read_text())
        assert results["status"] == "passed" and results["target"] == "sqlite"


def test_a_violation_prints_the_promise_the_ops_and_a_replay_that_reproduces_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["scenarios", "run", OOO, "--target", "mutant:last-write-wins",
                         "--report-dir", str(tmp_path)], capsys)
    assert code == 1
    assert "VIOLATED  out_of_order_completion" in out
    assert "promise broken (one_winner_per_job): one winner per job" in out
    assert "attempts A and B both won the same job (job)" in out
    assert re.search(r"#14-15 +t=30 +worker:A +succeeded\(attempt=A .*\) -> ok .*outcome=won",
                     out)
    replay = re.search(r"replay: (failover-harness replay .*)", out)
    assert replay is not None
    words = shlex.split(replay.group(1))
    assert words[3:] == ["--target", "mutant:last-write-wins"]
    folder = Path(words[2])
    code, again, _ = _run([*words[1:], "--report-dir", str(tmp_path / "replays")], capsys)
    assert code == 1
    assert "history: identical to the recorded run (22 ops)" in again
    assert "attempts A and B both won the same job (job)" in again
    replayed = sorted((tmp_path / "replays" / "latest" / "runs").iterdir())[0]
    assert (replayed / "history.jsonl").read_bytes() == (folder / "history.jsonl").read_bytes()


def test_replay_on_the_fixed_store_reports_where_the_history_diverged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(["scenarios", "run", OOO, "--target", "mutant:last-write-wins", "--report-dir",
          str(tmp_path)], capsys)
    folder = next((tmp_path / "latest" / "runs").iterdir()).resolve()
    code, out, _ = _run(["replay", str(folder), "--target", "sqlite", "--report-dir",
                         str(tmp_path)], capsys)
    assert code == 0
    assert "PASS      out_of_order_completion" in out
    assert "history: DIVERGED from the recorded run: op #15 differs" in out
    code, _, _ = _run(["replay", str(folder), "--target", "sqlite", "--expect-identical",
                       "--report-dir", str(tmp_path)], capsys)
    assert code == 1


def test_replay_of_a_scenario_file_and_of_a_broken_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["replay", OOO, "--report-dir", str(tmp_path)], capsys)
    assert code == 0 and "PASS      out_of_order_completion" in out
    (tmp_path / "empty").mkdir()
    code, _, err = _run(["replay", str(tmp_path / "empty")], capsys)
    assert code == 2 and "history.jsonl is missing" in err


def test_an_unknown_verdict_exits_3(write_scenario: Callable[..., Path], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario("unread_race", """
name: unread_race
intents: {x: {contract: c, input: {}, policy: {max_open_attempts: 2}}}
providers:
  slow: {latency: 9, outcome: result, result: {n: 1}}
  fast: {latency: 1, outcome: result, result: {n: 2}}
steps:
  - {at: 0, create: {key: k, intent: x}, save: job}
  - {at: 0, attempt: {job: job, provider: slow, name: A}}
  - {at: 1, attempt: {job: job, provider: fast, name: B}}
checkers: [late_result_discarded_recorded]
""")
    code, out, _ = _run(["scenarios", "run", str(path), "--report-dir", str(tmp_path)], capsys)
    assert code == 3
    assert "UNKNOWN   unread_race" in out and "no races read after A's late result" in out


def test_list_and_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["scenarios", "list", str(SCENARIOS_DIR)], capsys)
    assert code == 0 and out.count("checkers:") == 13
    two = [str(SCENARIOS_DIR / "double_click.yaml"), str(SCENARIOS_DIR / "mismatched_key.yaml")]
    code, out, _ = _run(["scenarios", "matrix", *two, "--report-dir", str(tmp_path)], capsys)
    assert code == 1
    assert "problem: mutant timeout-marks-failed is caught by no scenario" in out
    assert "scenarios/s" in out
    # like every judging command: the report folder, with the matrix in results.json (qa Q24)
    results = json.loads((tmp_path / "latest" / "results.json").read_text("utf-8"))
    assert results["command"] == "scenarios matrix" and results["exit_code"] == 1
    assert any(e["type"] == "detection_matrix" for e in results["events"])


@pytest.mark.parametrize(("target", "message"), [
    ("mutant:nope", "no mutant named 'nope'"),
    ("sqlite:relative.db", "write sqlite:///relative/file.db"),
    ("redis://localhost", "unsupported target 'redis://localhost'"),
    ("http://127.0.0.1:9", "needs a bearer token per scenario owner"),
    ("mutant:owner-leak@mysql://u:hunter2@h/db", "mutant database 'mysql://u:***@h/db'"),
])
def test_a_bad_target_is_exit_2(target: str, message: str, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("HARNESS_TOKENS", raising=False)
    code, _, err = _run(["scenarios", "run", OOO, "--target", target], capsys)
    assert code == 2 and message in err and "hunter2" not in err


def test_an_unreachable_service_is_exit_2(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tok-a-123456: alice\n", encoding="utf-8")
    from tests.service.serving import free_port

    url = f"http://127.0.0.1:{free_port()}"
    code, _, err = _run(["scenarios", "run", OOO, "--target", url, "--tokens-file", str(tokens)],
                        capsys)
    assert code == 2 and "cannot reach the target" in err and "tok-a-123456" not in err


def test_no_action_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 2


def test_passwords_are_redacted_from_target_descriptions() -> None:
    assert redact("postgresql://app:s3cret@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert redact("postgresql://app@db/x") == "postgresql://app@db/x"
    assert redact("mutant:lost-update@postgresql://app:s3cret@db/x") == \
        "mutant:lost-update@postgresql://app:***@db/x"
    assert redact("postgresql://db/x?sslmode=require&password=s3cret") == \
        "postgresql://db/x?sslmode=require&password=***"
    assert redact("mutant:lost-update@host=db password=s3cret dbname=x") == \
        "mutant:lost-update@host=db password=*** dbname=x"
    assert redact("host=db password = 'se cret' dbname=x") == "host=db password = *** dbname=x"
