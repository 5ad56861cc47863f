"""A trial's replay repeats its arrival schedule, not its verdict (qa Q16): the run folder of a
trial records how often its race showed; a replay of a failing trial that passes is "not
reproduced this time" (exit 3, unknown), never a pass; ``--until-violated N`` replays until the
race shows again (exit 1) or says how likely N passes were had it still happened (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.scenarios import load_scenario
from harness.scenarios.model import Scenario
from harness.scenarios.replay import ReplayOutcome, chance_of_passes, rate_text, reproduction
from harness.scenarios.runfolder import RecordedRun, read_run
from harness.scenarios.runner import RunResult
from harness.scenarios.targets import open_target
from harness.scenarios.trials import run_trials

ROOT = Path(__file__).resolve().parents[2]
DOUBLE_CLICK = ROOT / "scenarios" / "double_click.yaml"
MUTANT = "mutant:check-then-insert"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture(scope="module")
def trial_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of the first failing trial of double_click on a racy mutant."""
    reports = tmp_path_factory.mktemp("reports")
    assert main(["scenarios", "run", str(DOUBLE_CLICK), "--target", MUTANT, "--trials", "3",
                 "--report-dir", str(reports), "--quiet"]) == 1
    return next((reports / "latest").resolve().glob("runs/*double_click"))


def test_every_trial_knows_its_place_in_the_series() -> None:
    with open_target(MUTANT) as target:
        ts = run_trials(load_scenario(DOUBLE_CLICK), target, trials=3)
    broke = ts.violated("burst")
    assert [r.trial for r in ts.all_runs] == [
        {"trial": k, "of": 3, "pattern": "burst", "broke": broke} for k in (1, 2, 3)]


def test_the_run_folder_records_the_series_rate(trial_folder: Path) -> None:
    trial = json.loads((trial_folder / "results.json").read_text("utf-8"))["trial"]
    assert trial["of"] == 3 and trial["pattern"] == "burst" and 1 <= trial["broke"] <= 3
    assert rate_text(trial) == f"the race showed in {trial['broke']} of 3 burst trials"


def test_a_failing_trial_that_passes_on_replay_is_not_reproduced_not_fixed(
        trial_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trial = read_run(trial_folder).results["trial"]
    # the correct store has no race: the replay passes, which says nothing about the race
    code, text = _run(["replay", str(trial_folder), "--target", "sqlite", "--report-dir",
                       str(tmp_path)], capsys)
    assert code == 3, text
    assert (f"not reproduced this time — the race showed in {trial['broke']} of 3 burst trials "
            "— so this pass is not evidence of a fix") in text


def test_until_violated_stops_at_the_race_or_says_how_likely_the_passes_were(
        trial_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _run(["replay", str(trial_folder), "--target", MUTANT, "--until-violated", "5",
                       "--report-dir", str(tmp_path / "a")], capsys)
    assert code == 1, text
    assert "reproduced: violated again" in text
    code, text = _run(["replay", str(trial_folder), "--target", "sqlite", "--until-violated",
                       "3", "--report-dir", str(tmp_path / "b")], capsys)
    assert code == 3, text
    assert "replay 2 of 3: passed" in text and "not reproduced in 3 replays" in text
    assert "3 passes in a row had" in text and "0 of N trials is the evidence" in text
    code, text = _run(["replay", str(trial_folder), "--until-violated", "0"], capsys)
    assert code == 2 and "--until-violated" in text, text


def test_a_deterministic_replay_that_passes_is_evidence(shipped: dict[str, Scenario]) -> None:
    """A sequential scenario on an in-process store decides nothing anew: a pass on another
    target is that target's verdict (the README's reference replay exits 0)."""
    result = RunResult(shipped["timeout_unknown"], "sqlite", "sqlite", 0, "r", "held")
    recorded = RecordedRun(Path("."), {"status": "violated"}, [], [])
    assert reproduction(ReplayOutcome(result, recorded, "op #15 differs", True)) is None
    live = reproduction(ReplayOutcome(result, recorded, "op #15 differs", False))
    assert live is not None and live.outcome == "unknown"
    assert "not reproduced this time (the recorded run was violated)" in live.note


def test_the_chance_of_passes_follows_the_recorded_rate() -> None:
    assert chance_of_passes({"broke": 13, "of": 20}, 1) == pytest.approx(0.35)
    assert chance_of_passes({"broke": 13, "of": 20}, 3) == pytest.approx(0.35 ** 3)
    assert chance_of_passes(None, 3) is None


@pytest.mark.postgres
def test_a_run_on_a_database_whose_password_was_removed_is_never_replayed_elsewhere(
        pg_password_dsn: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """qa Q15: the folder keeps the DSN without its password; replay without --target must not
    fall back to the reference SQLite store (which would say PASS): exit 2 naming the target."""
    dsn, password = pg_password_dsn  # a role of this test whose password the server checks
    head, rest = dsn.split("://", 1)
    user, host = rest.split(":", 1)[0], rest.split("@", 1)[1]
    target = f"mutant:last-write-wins@{dsn}"
    scenario = ROOT / "scenarios" / "out_of_order_completion.yaml"
    code, text = _run(["scenarios", "run", str(scenario), "--target", target, "--report-dir",
                       str(tmp_path / "a")], capsys)
    assert code == 1, text
    folder = next((tmp_path / "a" / "latest").resolve().glob("runs/*"))
    code, text = _run(["replay", str(folder), "--report-dir", str(tmp_path / "b")], capsys)
    assert code == 2, text
    assert "on sqlite" not in text and password not in text
    assert f"this run ran on mutant:last-write-wins@{head}://{user}@{host}" in text
    assert "PGPASSWORD" in text
