"""Side effects as billed provider calls (issue 30 item 4): a service with no counter endpoint,
whose worker calls a provider once per job, is judged on ``one_side_effect_per_click`` by the
calls a recording fake received — held on the correct service, broken by check-then-insert."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.providers.fake_server import FakeServer
from harness.providers.recording import RecordingFake
from harness.scenarios import load_scenario, run_trials
from harness.scenarios.runner import RunResult
from harness.scenarios.targets.service import ProfileTarget
from tests.target.twins import PROFILE, twin

DETECTION = Path(__file__).resolve().parents[2] / "scenarios" / "detection"
DUPLICATES = DETECTION / "duplicate_arrivals.yaml"
DRILL = """\
drill:
  submit:
    path: /jobs
    headers: {Idempotency-Key: "{key}", X-Owner: drill}
    body: {text: "Summarise ticket {tag}."}
  observe:
    path: "/jobs/{job_id}"
    headers: {X-Owner: drill}
    result_field: result.text
    statuses: {succeeded: [succeeded], failed: [failed], running: [queued, running]}
    poll_s: 0.02
  providers:
    - {name: gpt, wire: openai, role: primary, port: 1}
  timeouts: {provider_s: 0.5, job_s: 5}
"""


@pytest.fixture
def provider() -> Iterator[tuple[RecordingFake, str]]:
    fake = RecordingFake("openai-chat", name="gpt")
    with FakeServer(fake) as server:
        yield fake, server.url


def side_effect_checks(result: RunResult) -> list[str]:
    return [c.verdict for c in result.checks if c.checker == "one_side_effect_per_click"]


def judge(flaw: str | None, provider: tuple[RecordingFake, str], tmp_path: Path,
          scenario_file: Path = DUPLICATES) -> list[str]:
    fake, url = provider
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE + DRILL, encoding="utf-8")
    scenario = load_scenario(scenario_file)
    patterns = ["burst"] if scenario.arrival is not None else None
    with twin(flaw, provider=url) as base, ProfileTarget(base, path, env={}) as target:
        assert "side_effects" not in target.capabilities
        assert target.count_provider_calls([fake])
        assert "side_effects" in target.capabilities
        trials = run_trials(scenario, target, trials=1, patterns=patterns)
    verdicts = [v for run in trials.all_runs for v in side_effect_checks(run)]
    assert verdicts, "one_side_effect_per_click was not judged"
    return verdicts


def test_one_call_per_click_holds_on_the_correct_service(
        provider: tuple[RecordingFake, str], tmp_path: Path) -> None:
    assert judge(None, provider, tmp_path) == ["valid"]
    untagged = [r for r in provider[0].received() if r.tag is None]
    assert len(untagged) == 1 and untagged[0].billed  # eight clicks, one job, one call


def test_check_then_insert_bills_the_duplicate(
        provider: tuple[RecordingFake, str], tmp_path: Path) -> None:
    assert judge("check-then-insert", provider, tmp_path) == ["invalid"]
    assert len([r for r in provider[0].received() if r.tag is None]) > 1


def test_retries_after_completion_bill_nothing_more(
        provider: tuple[RecordingFake, str], tmp_path: Path) -> None:
    # replay_fidelity's re-serialised retry is, through a one-key body, the same request
    assert judge(None, provider, tmp_path, DETECTION / "replay_fidelity.yaml") == ["valid"]
    assert len([r for r in provider[0].received() if r.tag is None]) == 1
