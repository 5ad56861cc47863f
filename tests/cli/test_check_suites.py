"""Which suites ``check`` runs: a local ``scenarios/`` folder adds to the shipped and detection
suites; only explicit paths replace them; the line naming the suites says which ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.campaign.check import CheckSettings, _suites

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = len(list((ROOT / "scenarios").glob("*.yaml")))
DETECTION = len(list((ROOT / "scenarios" / "detection").glob("*.yaml")))
LOCAL = """name: my_own_double_click
actors: [alice]
intents:
  a: {contract: ticket_triage, input: {ticket: "mine"}}
steps:
  - {at: 0, create: {key: k-1, intent: a}, save: job, expect: {created: true}}
  - {at: 1, create: {key: k-1, intent: a}, expect: {created: false, job: job}}
checkers: [one_job_per_intent, duplicates_get_same_job]
"""


def _settings(scenarios: tuple[Path, ...] | None = None) -> CheckSettings:
    # the project's scenarios/ folder, as the command names it from the working directory
    local = Path("scenarios") if Path("scenarios").is_dir() else None
    return CheckSettings(scenarios=scenarios, local=local)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory that holds a scenarios/ folder of the user's own."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.yaml").write_text(LOCAL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_local_folder_adds_to_the_shipped_and_detection_suites(elsewhere: Path) -> None:
    scenarios, suites = _suites(_settings(), with_detection=True)
    names = {s.name for s in scenarios}
    assert "my_own_double_click" in names and "same_key_two_owners" in names
    assert "duplicate_arrivals" in names  # the detection suite still runs
    assert len(scenarios) == SHIPPED + DETECTION + 1
    assert suites == f"shipped ({SHIPPED}), detection ({DETECTION}), local scenarios/ (1)"


def test_the_self_check_adds_the_local_folder_without_detection(elsewhere: Path) -> None:
    scenarios, suites = _suites(_settings(), with_detection=False)
    assert len(scenarios) == SHIPPED + 1
    assert suites == f"shipped ({SHIPPED}), local scenarios/ (1)"


def test_only_explicit_paths_replace_the_shipped_suites(elsewhere: Path) -> None:
    scenarios, suites = _suites(_settings((Path("scenarios"),)), with_detection=True)
    assert [s.name for s in scenarios] == ["my_own_double_click"]
    assert "given paths replace the shipped suites" in suites


def test_the_checkout_itself_is_not_counted_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # its scenarios/ is the shipped folder
    scenarios, suites = _suites(_settings(), with_detection=True)
    assert len(scenarios) == SHIPPED + DETECTION
    assert "local" not in suites


def test_a_local_scenario_named_like_a_shipped_one_takes_its_place(elsewhere: Path) -> None:
    """``init`` copies the shipped scenarios: the user's copy (maybe edited) runs, once."""
    (elsewhere / "scenarios" / "mine.yaml").write_text(
        LOCAL.replace("my_own_double_click", "double_click"), encoding="utf-8")
    scenarios, suites = _suites(_settings(), with_detection=True)
    doubles = [s for s in scenarios if s.name == "double_click"]
    assert len(doubles) == 1 and doubles[0].source.endswith("mine.yaml")
    assert len(scenarios) == SHIPPED + DETECTION
    assert suites == (f"shipped ({SHIPPED - 1}), detection ({DETECTION}), local scenarios/ "
                      "(1, 1 in place of shipped ones of the same name)")
