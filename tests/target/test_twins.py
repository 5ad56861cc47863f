"""The scenarios judge a service by its own API (issue 30): a create body of its own (a body
template), the owner in a header (``owners:``), no counter endpoint. The correct service passes
what it can be asked; each defective twin breaks its own promise; a service refusing every create
stops at the preflight."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.errors import ConfigError
from harness.scenarios import load_scenario, run_scenario, run_trials
from harness.scenarios.model import Create
from harness.scenarios.runner import RunResult
from harness.scenarios.targets.service import ProfileTarget
from tests.target.twins import PROFILE, twin

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "twin.profile.yaml"
    path.write_text(PROFILE, encoding="utf-8")
    return path


@pytest.fixture
def served(request: pytest.FixtureRequest, profile: Path) -> Iterator[ProfileTarget]:
    with twin(request.param) as url, ProfileTarget(url, profile, env={}) as target:
        yield target


def broken(result: RunResult) -> set[str]:
    return {c.checker for c in result.checks if c.verdict == "broken"}


def run(target: ProfileTarget, name: str) -> RunResult:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    return run_scenario(scenario, target)


@pytest.mark.parametrize("served", [None], indirect=True)
@pytest.mark.parametrize("name", ["double_click", "mismatched_key", "same_key_two_owners"])
def test_the_correct_service_keeps_every_promise_it_is_asked(
        served: ProfileTarget, name: str) -> None:
    served.preflight()
    result = run(served, name)
    assert result.status == "held", (result.reason, [(c.checker, c.violations, c.unknowns)
                                                       for c in result.checks])
    sent = [op for op in result.history if op.f == "create" and op.type == "invoke"]
    assert sent, "the scenario sent no create"


@pytest.mark.parametrize("served", [None], indirect=True)
def test_owners_by_header_run_the_owner_scenarios(served: ProfileTarget) -> None:
    scenario = load_scenario(SCENARIOS / "same_key_two_owners.yaml")
    assert served.not_applicable(scenario) is None  # two owners, no tokens file
    assert served.unready(scenario) is None


@pytest.mark.parametrize("served", [None], indirect=True)
def test_a_one_key_body_has_nothing_to_reorder(served: ProfileTarget) -> None:
    scenario = load_scenario(SCENARIOS / "reordered_json_same_intent.yaml")
    why = served.not_applicable(scenario)
    assert why is not None and "nothing to reorder" in why and "create_job.body" in why


@pytest.mark.parametrize("served", ["check-then-insert"], indirect=True)
def test_check_then_insert_makes_the_duplicate_job(served: ProfileTarget) -> None:
    scenario = load_scenario(SCENARIOS / "detection" / "duplicate_arrivals.yaml")
    trials = run_trials(scenario, served, trials=2, patterns=["burst"])
    assert any("one_job_per_intent" in broken(r) for r in trials.all_runs), \
        [(r.status, broken(r)) for r in trials.all_runs]


@pytest.mark.parametrize("served", ["ignores-owner"], indirect=True)
def test_an_owner_ignoring_service_leaks_the_job(served: ProfileTarget) -> None:
    result = run(served, "same_key_two_owners")
    assert result.status == "broken"
    assert "owners_isolated" in broken(result)


@pytest.mark.parametrize("served", ["replays-other-body"], indirect=True)
def test_replaying_another_body_breaks_mismatched_key(served: ProfileTarget) -> None:
    result = run(served, "mismatched_key")
    assert result.status == "broken"
    assert "mismatch_rejected_unchanged" in broken(result)


@pytest.mark.parametrize("served", ["refuses-all"], indirect=True)
def test_a_service_refusing_every_create_stops_at_the_preflight(served: ProfileTarget) -> None:
    with pytest.raises(ConfigError) as caught:
        served.preflight()
    text = str(caught.value)
    assert "refused every create with 422" in text
    assert '"invalid_body"' in text  # the service's own words
    assert "operations.create_job.body" in (caught.value.fix or "")


@pytest.mark.parametrize("served", [None], indirect=True)
def test_the_body_sent_is_the_services_own(served: ProfileTarget) -> None:
    scenario = load_scenario(SCENARIOS / "mismatched_key.yaml")
    first, second = scenario.steps[0].action, scenario.steps[1].action
    assert isinstance(first, Create) and isinstance(second, Create)
    small, large = served.as_sent(first.intent), served.as_sent(second.intent)
    assert set(small.body) == {"text"} and small.text.startswith('{"text":"contract=')
    assert small.text != large.text and small.fingerprint != large.fingerprint


def test_check_stops_with_exit_2_on_a_service_refusing_every_create(
        profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with twin("refuses-all") as url:
        code = main(["check", "--target", url, "--target-profile", str(profile),
                     "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2
    assert "refused every create with 422" in err and "operations.create_job.body" in err
    assert not (tmp_path / "report").exists()  # no scenario ran, nothing was reported
