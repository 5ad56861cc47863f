"""A store target's side effects: it runs no handler, so a click's one effect is its job row.

The detection suite's ``one_side_effect_per_click`` is judged on the reference store and the
mutants (before, it was unknown there, with a fix naming a profile a store cannot have), and the
counter is read only in the scenarios that judge it, so other histories keep their ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.domain.clock import ManualClock
from harness.scenarios import load_scenario
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets import open_target
from harness.scenarios.trials import run_trials
from tests.scenarios.conftest import SCENARIOS_DIR

DETECTION = SCENARIOS_DIR / "detection"


@pytest.mark.parametrize("name", ["duplicate_arrivals", "mismatched_body", "replay_fidelity"])
def test_the_reference_store_passes_the_side_effect_promise(store_url: str, name: str) -> None:
    scenario = load_scenario(DETECTION / f"{name}.yaml")
    target = open_target(store_url)
    try:
        result = run_trials(scenario, target, trials=3)
    finally:
        target.close()
    runs = [run for runs in result.runs.values() for run in runs]
    assert runs and all(run.status == "held" for run in runs), [
        (run.status, run.reason) for run in runs]
    for run in runs:
        check = next(c for c in run.checks if c.checker == "one_side_effect_per_click")
        assert check.verdict == "held"
        readings = [op for op in run.history if op.f == "side_effects" and op.type == "ok"]
        assert len(readings) == 2  # start and end, judged


def test_the_counter_counts_this_runs_jobs_only(store_url: str) -> None:
    target = open_target(store_url)
    intent = '{"contract": "c", "input": {"n": 1}}'
    try:
        with target.session(ManualClock(), "run1", 1) as first:
            assert first.count_side_effects() == 0  # type: ignore[attr-defined]
            assert first.create_job("alice", "k1", intent).status == 201
            assert first.create_job("alice", "k1", intent).status == 200  # a replay: no effect
            assert first.create_job("bob", "k1", intent).status == 201
        with target.session(ManualClock(), "run2", 1) as second:  # same database, another run
            assert second.count_side_effects() == 0  # type: ignore[attr-defined]
            assert second.create_job("alice", "k2", intent).status == 201
            assert second.count_side_effects() == 1  # type: ignore[attr-defined]
        with target.session(ManualClock(), "run1", 1) as again:
            assert again.count_side_effects() == 2  # type: ignore[attr-defined]
    finally:
        target.close()


def test_scenarios_that_do_not_judge_it_do_not_read_it(store_url: str) -> None:
    scenario = load_scenario(SCENARIOS_DIR / "double_click.yaml")
    target = open_target(store_url)
    try:
        run = run_scenario(scenario, target)
    finally:
        target.close()
    assert run.status == "held"
    assert not [op for op in run.history if op.f == "side_effects"]


def test_check_on_a_store_target_is_not_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli import main

    monkeypatch.chdir(tmp_path)  # no providers.yaml here: certification and gate are skipped
    code = main(["check", "--target", f"sqlite:///{tmp_path / 'x.db'}", "--trials", "3"])
    out = capsys.readouterr().out
    assert "0 unknown" in out and "side effects were not observed" not in out, out
    assert code == 0, out
