"""``failover-harness explore`` and ``replay`` end to end, on SQLite and PostgreSQL: a mutant's
race is found, shrunk, written, and replayed to the same violation; the same seed writes the same
bytes; bad input is exit 2 with the field and the fix."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main

Text = Callable[..., str]


def replays(tmp_path: Path) -> list[str]:
    """The options that keep a replay's report folder in the test's tmp_path."""
    return ["--report-dir", str(tmp_path / "replays")]


def explore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["explore", *args])
    return code, capsys.readouterr().out


def repro_of(out: str) -> Path:
    match = re.search(r"^repro: (\S+)", out, re.MULTILINE)
    assert match, out
    return Path(match.group(1))


@pytest.mark.parametrize(("mutant", "workload", "promise"), [
    ("check-then-insert", "double-click", "duplicates_get_same_job"),
    ("last-write-wins", "claims", "results_never_overwritten"),
])
def test_a_race_is_found_shrunk_and_replays_three_times_out_of_three(
        target_text: Text, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        mutant: str, workload: str, promise: str) -> None:
    target = target_text(mutant)
    code, out = explore(capsys, "--target", target, "--workload", workload, "--seed", "3",
                        "--budget", "200", "--report-dir", str(tmp_path))
    assert code == 1, out
    assert out.splitlines()[0] == "explore: seed 3"
    folder = repro_of(out)
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert results["found"]["schedules"] <= 200
    assert promise in results["broken"]
    assert results["steps"] <= 8, (folder / "explanation.txt").read_text(encoding="utf-8")
    assert results["shrink"]["original_steps"] >= results["steps"]
    assert set(p.name for p in folder.iterdir()) >= {
        "scenario.yaml", "schedule.jsonl", "history.jsonl", "explanation.txt", "results.json"}
    explanation = (folder / "explanation.txt").read_text(encoding="utf-8")
    assert f"The promise ({promise})" in explanation and "Who won, what was lost:" in explanation
    assert f"failover-harness replay {folder} --target" in out
    for _ in range(3):
        code = main(["replay", str(folder), "--target", target, *replays(tmp_path)])
        replayed = capsys.readouterr().out
        assert code == 1, replayed
        assert "schedule and history: identical to the recorded run" in replayed
        assert f"promise broken ({promise})" in replayed


def test_commit_steps_are_recorded_and_replayed(
        target_text: Text, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = target_text("check-then-insert")
    code, out = explore(capsys, "--target", target, "--workload", "double-click", "--seed",
                        "6", "--commit-steps", "--report-dir", str(tmp_path))
    assert code == 1, out
    folder = repro_of(out)
    assert "commit_steps: true" in (folder / "scenario.yaml").read_text(encoding="utf-8")
    assert main(["replay", str(folder), "--target", target, *replays(tmp_path)]) == 1
    assert "schedule and history: identical" in capsys.readouterr().out
    # The scenario file alone is a repro too (its folder's recordings are compared).
    assert main(["replay", str(folder / "scenario.yaml"), "--target", target,
                 *replays(tmp_path)]) == 1
    assert "schedule and history: identical" in capsys.readouterr().out


def test_the_same_seed_writes_the_same_bytes_three_times(
        target_text: Text, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = set()
    for n in range(3):
        code, out = explore(capsys, "--target", target_text("cancelled-can-win"), "--workload",
                            "claims", "--seed", "21", "--report-dir", str(tmp_path / str(n)))
        assert code == 1, out
        folder = repro_of(out)
        written.add(tuple((folder / name).read_bytes()
                          for name in ("history.jsonl", "schedule.jsonl", "scenario.yaml")))
    assert len(written) == 1


def test_a_fixed_store_diverges_and_a_tampered_repro_is_caught(
        target_text: Text, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = explore(capsys, "--target", target_text("check-then-insert"), "--workload",
                        "double-click", "--seed", "4", "--report-dir", str(tmp_path))
    folder = repro_of(out)
    # The reference store runs other statements: the recorded schedule no longer applies.
    code = main(["replay", str(folder), "--target", target_text(), *replays(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "DIVERGED  the schedule diverged" in out
    assert "the verdict is now passed" in out
    # A history that differs from what the schedule produces is a divergence too.
    history = folder / "history.jsonl"
    lines = history.read_text(encoding="utf-8").splitlines()
    history.write_text("\n".join([*lines[:-1], lines[-1].replace('"tab', '"TAB')]) + "\n",
                       encoding="utf-8")
    code = main(["replay", str(folder), "--target", target_text("check-then-insert"),
                 *replays(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and f"DIVERGED  history op #{len(lines) - 1} differs" in out


def test_the_budget_spent_clean_is_exit_0(target_text: Text, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out = explore(capsys, "--target", target_text(), "--seed", "8", "--budget", "40",
                        "--report-dir", str(tmp_path))
    assert code == 0, out
    assert "no violation in 40 schedules" in out and "schedules/s" in out
    assert not (tmp_path / "repro").exists()


@pytest.mark.parametrize(("args", "wanted"), [
    (["--clients", "1"], "--clients: "),
    (["--budget", "0"], "--budget: "),
    (["--time-limit", "-1"], "--time-limit: "),
    (["--stress", "--choices", "exhaustive"], "--choices: "),
    (["--target", "http://127.0.0.1:9"], "--stress"),
    (["--target", "mutant:no-such-bug"], "no mutant named 'no-such-bug'"),
    (["--target", "ftp://x"], "unsupported target"),
])
def test_bad_input_is_exit_2_with_the_fix(args: list[str], wanted: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--seed", "1", *args]) == 2
    err = capsys.readouterr().err
    assert wanted in err and "Traceback" not in err


def test_argparse_mistakes_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["explore", "--workload", "triple-click"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit) as exit_:
        main(["explore", "--budget", "5", "--time-limit", "3"])
    assert exit_.value.code == 2


def test_a_damaged_repro_is_exit_2_naming_the_file(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("format: failover-harness/explore-v1\nplan: [1, 2\n", encoding="utf-8")
    assert main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{scenario}:3" in err and "fix:" in err
    scenario.write_text("format: failover-harness/explore-v1\nplan: {workload: x}\n"
                        "schedule: []\n", encoding="utf-8")
    assert main(["replay", str(tmp_path)]) == 2
    assert "the plan is damaged" in capsys.readouterr().err


def test_seed_and_schedule_rerun_exactly_the_failing_schedule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--target", "mutant:cancelled-can-win", "--workload", "claims", "--seed", "12",
            "--no-shrink"]
    code, out = explore(capsys, *args, "--report-dir", str(tmp_path / "a"))
    assert code == 1
    first = repro_of(out)
    number = json.loads((first / "results.json").read_text(encoding="utf-8"))["found"]["schedule"]
    code, out = explore(capsys, *args, "--schedule", str(number), "--budget", "1",
                        "--report-dir", str(tmp_path / "b"))
    assert code == 1 and "after 1 schedule " in out  # one schedule, said as one
    again = repro_of(out)
    assert (again / "history.jsonl").read_bytes() == (first / "history.jsonl").read_bytes()


def test_a_time_limit_ends_a_clean_search(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    # 2 s: enough schedules to exercise every promise on a loaded machine (0.3 s gave 22 at a
    # load average of 18, and under four xdist workers sometimes too few: exit 3, not evidence)
    code, out = explore(capsys, "--time-limit", "2", "--seed", "1", "--report-dir",
                        str(tmp_path))
    assert code == 0 and "time limit reached" in out, out
