"""Each job's entry point, called as a library (no CLI, no working directory): frozen settings
in, a stream of typed events out, and the verdict the stream returns."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from harness.domain.errors import ConfigError
from harness.domain.stream import AddTarget, Begin, Quiet, collect
from harness.explore.entry import (
    ExploreSettings,
    ReproReplaySettings,
    run_explore,
    run_repro_replay,
)
from harness.explore.events import ExploreResult
from harness.scenarios.entry import (
    MatrixSettings,
    ReplaySettings,
    ScenariosSettings,
    run_matrix,
    run_replay,
    run_scenarios,
    shipped_scenarios,
)
from harness.scenarios.events import DetectionMatrix, ReplayComparison, ScenarioRun, TrialSeries

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def test_settings_are_frozen_and_keyword_only() -> None:
    settings = ScenariosSettings(paths=(SCENARIOS / "double_click.yaml",))
    with pytest.raises(FrozenInstanceError):
        settings.seed = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        ScenariosSettings((SCENARIOS / "double_click.yaml",))  # type: ignore[misc]


def test_scenarios_on_a_broken_store_fail_and_leave_a_run_folder_to_replay(
        tmp_path: Path, nowhere: Path) -> None:
    reports = tmp_path / "report"
    settings = ScenariosSettings(paths=(SCENARIOS / "out_of_order_completion.yaml",),
                                 target="mutant:last-write-wins", seed=2)
    messages, verdict = collect(run_scenarios(settings, folder=lambda: reports))
    assert isinstance(messages[0], Begin) and messages[0].targets
    runs = [m for m in messages if isinstance(m, ScenarioRun)]
    assert verdict == "fail"
    assert [(r.scenario, r.verdict, r.outcome) for r in runs] == [
        ("out_of_order_completion", "broken", "fail")]
    run_dir = Path(runs[0].run_dir)
    assert run_dir.parent.parent == reports and run_dir.is_dir()

    replayed, again = collect(run_replay(ReplaySettings(path=run_dir), folder=lambda: reports))
    comparison = next(m for m in replayed if isinstance(m, ReplayComparison))
    assert comparison.identical is True and again == "fail"


def test_trials_come_back_as_a_series(tmp_path: Path, nowhere: Path) -> None:
    settings = ScenariosSettings(paths=(SCENARIOS / "double_click.yaml",), trials=2, seed=1)
    messages, verdict = collect(run_scenarios(settings, folder=lambda: tmp_path))
    series = [m for m in messages if isinstance(m, TrialSeries)]
    assert verdict == "pass" and len(series) == 1 and series[0].verdict == "held"


def test_explore_finds_shrinks_and_replays_a_race(tmp_path: Path, nowhere: Path) -> None:
    settings = ExploreSettings(target="mutant:check-then-insert", workload="double-click",
                               budget=60, seed=3)
    messages, verdict = collect(run_explore(settings, folder=lambda: tmp_path))
    assert any(isinstance(m, AddTarget) for m in messages)
    result = next(m for m in messages if isinstance(m, ExploreResult))
    assert verdict == "fail" and result.outcome == "fail" and result.replayed_identical
    repro = Path(result.repro_dir)
    assert repro.is_dir() and repro.parent.parent == tmp_path

    again, verdict = collect(run_repro_replay(ReproReplaySettings(path=repro),
                                              folder=lambda: tmp_path))
    comparison = next(m for m in again if isinstance(m, ReplayComparison))
    assert comparison.identical is True and verdict == "fail"


def test_explore_refuses_bad_settings_before_its_stream_begins(tmp_path: Path) -> None:
    stream = run_explore(ExploreSettings(seed=1, clients=1), folder=lambda: tmp_path)
    with pytest.raises(ConfigError, match="out of range"):
        next(stream)
    assert list(tmp_path.iterdir()) == []


def test_the_matrix_entry_point_judges_without_the_cli(tmp_path: Path) -> None:
    """``scenarios matrix`` as an entry point: the shipped double-click scenario against the
    reference store and every mutant; the event says which mutant it caught, and the stream's
    verdict is the event's outcome (not every mutant is caught by one scenario: fail)."""
    lines: list[str] = []

    class Lines(Quiet):
        def say(self, text: str) -> None:
            lines.append(text)

    settings = MatrixSettings(paths=(shipped_scenarios() / "double_click.yaml",), seed=7)
    messages, verdict = collect(run_matrix(settings, folder=lambda: tmp_path, live=Lines()))
    assert isinstance(messages[0], Begin) and messages[0].targets == ("sqlite",)
    (matrix,) = [m for m in messages if isinstance(m, DetectionMatrix)]
    assert matrix.scenarios == ("double_click",) and "reference" in matrix.targets
    assert matrix.cell("double_click", "reference") == "held"
    assert any(matrix.caught(t) for t in matrix.targets if t != "reference")
    assert verdict == matrix.outcome
    assert any("runs in" in line for line in lines)
