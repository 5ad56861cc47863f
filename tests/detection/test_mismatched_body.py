"""Another body under a used key (scenarios/detection/mismatched_body.yaml), in flight and after
completion: a correct middleware refuses it; one that replays the first job for it and one that
runs a new job are both reported, each with its rate."""

from __future__ import annotations

from collections.abc import Callable

from harness.scenarios.model import Scenario
from harness.scenarios.targets.base import Target
from harness.scenarios.trials import run_trials
from tests.detection.conftest import Start

PATTERNS = ["burst", "straddle"]


def test_a_correct_middleware_refuses_another_body_in_flight_and_after(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("correct").url)
    ts = run_trials(detection["mismatched_body"], target, trials=2, patterns=PATTERNS)
    assert ts.status == "held", (ts.failures(), ts.unknowns())
    refused = [op for r in ts.all_runs for op in r.history
               if op.f == "create" and op.type == "fail"]
    assert len(refused) == 2 * len(PATTERNS) * 3  # 2 other-body copies in flight + 1 after


def test_a_silent_replay_of_the_first_job_is_reported_with_its_rate(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("gap", "--flaws", "no-fingerprint").url)
    ts = run_trials(detection["mismatched_body"], target, trials=2, patterns=PATTERNS)
    rates = ts.failures()["mismatch_rejected_unchanged:replayed_first"]
    for pattern in PATTERNS:
        assert rates[pattern].text == "2 of 2 trials silently replayed the first job for " \
                                      "another body", pattern
    assert "mismatch_rejected_unchanged:new_job" not in ts.failures()


def test_a_new_job_for_another_body_is_reported_with_its_rate(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("gap", "--flaws", "raw-body-key").url)
    ts = run_trials(detection["mismatched_body"], target, trials=2, patterns=PATTERNS)
    failures = ts.failures()
    for pattern in PATTERNS:
        assert failures["mismatch_rejected_unchanged:new_job"][pattern].text == \
            "2 of 2 trials ran a new job for another body under a used key"
        assert failures["one_side_effect_per_click"][pattern].failed == 2
    assert "mismatch_rejected_unchanged:replayed_first" not in failures


def test_a_profile_without_a_key_reuse_answer_still_judges_another_body(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    correct = profiled(start_service("correct").url, conflict="none")
    assert run_trials(detection["mismatched_body"], correct, trials=1,
                      patterns=["burst"]).status == "held"
    silent = profiled(start_service("gap", "--flaws", "no-fingerprint").url, conflict="none")
    ts = run_trials(detection["mismatched_body"], silent, trials=1, patterns=["burst"])
    assert "mismatch_rejected_unchanged:replayed_first" in ts.failures()
