"""Detection power against the example services (examples/), on real loopback sockets: each
pattern and checker catches the flaw it is for, at a measured rate, and the correct service
passes everything. The rates are printed (pytest -s) as "k of n trials …"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.scenarios.model import Scenario
from harness.scenarios.targets.base import Target
from harness.scenarios.trials import TrialSet, run_trials
from tests.detection.conftest import SQL_PROFILE, Start

#: how long the gap service takes to store a response after it released its lock: straddle
#: copies land in the last third of the first request's measured latency, so the gap must be
#: most of that latency, with room for a loaded machine to start the handler late (60 ms left
#: 1 of 6 and 0 of 2 copies in the gap on a machine slowed to twice its speed; the wait is
#: wall time, not CPU)
STORE_MS = "200"


def _rates(ts: TrialSet) -> dict[str, dict[str, int]]:
    return {c: {p: r.failed for p, r in rates.items()} for c, rates in ts.failures().items()}


def _report(ts: TrialSet) -> None:
    for checker, rates in ts.failures().items():
        for rate in rates.values():
            print(f"{ts.scenario.name} [{checker}] {rate.pattern}: {rate.text}")


def _messages(ts: TrialSet, checker: str) -> list[str]:
    return [v.message for r in ts.all_runs for c in r.checks if c.checker == checker
            for v in c.violations]


def test_the_correct_service_keeps_every_promise_under_every_pattern(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("correct").url)
    for name, scenario in detection.items():
        ts = run_trials(scenario, target, trials=2)
        assert ts.status == "held", (name, _rates(ts), ts.unknowns())
        for pattern in ts.patterns:
            if pattern != "sequential":
                assert set(ts.histogram(pattern)) <= {"created", "same job",
                                                      "in flight → same job"}, pattern


def test_straddle_catches_a_lock_released_before_the_response_is_stored(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("gap", "--flaws", "store-gap", "--store-ms", STORE_MS,
                                    process=True).url)
    ts = run_trials(detection["duplicate_arrivals"], target, trials=6, patterns=["straddle"])
    _report(ts)
    rate = ts.rate("one_side_effect_per_click", "straddle")
    assert rate.failed >= 3, rate.text  # the copies are timed to land in the gap
    assert rate.text.endswith(" of 6 trials made a second side effect")
    assert any("a duplicate ran the handler again" in m
               for m in _messages(ts, "one_side_effect_per_click"))
    # every answer still names the first job: only the counter (and the 201) show the rerun
    assert ts.histogram("straddle")["other job"] == 0


def test_a_burst_catches_a_layer_without_a_lock(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("gap", "--flaws", "no-lock").url)
    ts = run_trials(detection["duplicate_arrivals"], target, trials=2, patterns=["burst"])
    _report(ts)
    assert ts.rate("one_side_effect_per_click", "burst").failed == 2
    assert ts.histogram("burst")["created again"] >= 2


def test_staggered_duplicates_get_through_where_a_burst_is_merged(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    scenario = detection["duplicate_arrivals"]
    # a burst: the first copy's handler is held until the other seven have met it in flight
    # (not a length of work that a loaded machine may outlast), so every one is merged
    held = profiled(start_service("gap", "--flaws", "inflight-only", "--hold-copies", "8").url)
    burst = run_trials(scenario, held, trials=3, patterns=["burst"])
    _report(burst)
    assert burst.violated("burst") == 0
    answers = burst.histogram("burst")
    assert answers["same job"] + answers["in flight → same job"] == 3 * 7, answers
    # staggered over three of the first request's latencies: some copies come after it ended
    target = profiled(start_service("gap", "--flaws", "inflight-only", "--work-ms", "100").url)
    ts = run_trials(scenario, target, trials=3, patterns=["staggered"])
    _report(ts)
    assert ts.rate("one_job_per_intent", "staggered").failed == 3
    assert ts.histogram("staggered")["other job"] > 0


def test_a_conflict_for_a_duplicate_that_never_ran_is_a_defect(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    # the first copy's handler is held until the other seven were refused: all overlapped
    target = profiled(start_service("gap", "--flaws", "conflict-losers", "--hold-copies",
                                    "8").url)
    ts = run_trials(detection["duplicate_arrivals"], target, trials=2, patterns=["burst"])
    _report(ts)
    assert ts.histogram("burst")["409 conflict"] == 2 * 7
    assert ts.rate("loser_answers_allowed", "burst").failed == 2
    assert any("409 conflict — a refusal for a request that never ran" in m
               for m in _messages(ts, "loser_answers_allowed"))


def test_423_locked_then_the_same_job_is_allowed(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("correct", "--busy-status", "423", "--work-ms", "60").url)
    ts = run_trials(detection["duplicate_arrivals"], target, trials=2, patterns=["burst"])
    assert ts.status == "held", (_rates(ts), ts.unknowns())
    locked = ts.histogram("burst")["locked → same job"]
    assert locked >= 2
    assert ts.busy("burst")["locked"] >= locked  # its own count: every 423 sent again


def test_a_key_stuck_after_a_handler_failure_is_reported_with_how_long(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    target = profiled(start_service("gap", "--flaws", "sticky-lock").url, lease_s=0.2)
    ts = run_trials(detection["handler_failure"], target, trials=1)
    assert set(_rates(ts)) == {"retry_after_failure_served", "in_progress_within_lease"}
    stuck = _messages(ts, "retry_after_failure_served")[0]
    assert stuck.startswith("after the handler failed, alice's key 'fail-1' was still held in "
                            "progress ")
    assert "(lease 200 ms)" in stuck and stuck.endswith("— the key is stuck")
    held = float(stuck.split("in progress ")[1].split(" ms")[0])
    assert held >= 200  # it was asked for twice the lease before the engine gave up


def test_a_cached_500_breaks_a_retry_policy_and_is_fine_for_a_final_one(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    scenario = detection["handler_failure"]
    cached = start_service("gap", "--flaws", "cache-5xx").url
    ts = run_trials(scenario, profiled(cached), trials=1)
    assert set(_rates(ts)) == {"error_replay_follows_policy"}
    assert "was stored and answered again to the retry and marked it a replay" in \
        _messages(ts, "error_replay_follows_policy")[0]
    final = start_service("correct", "--error-policy", "final").url
    assert run_trials(scenario, profiled(final, on_handler_error="final")).status == "held"
    rerun = start_service("correct").url  # it lets the retry run, but the profile says final
    ts = run_trials(scenario, profiled(rerun, on_handler_error="final"), trials=1)
    assert "ran again and got job" in _messages(ts, "error_replay_follows_policy")[0]


@pytest.mark.parametrize(("flaw", "checkers", "message"), [
    ("mutated-fingerprint", {"identical_retry_replayed"},
     "an identical retry of alice's 'fid-1' after completion was rejected as a different "
     "payload (422)"),
    ("raw-body-key", {"identical_retry_replayed", "one_job_per_intent",
                      "one_side_effect_per_click"},
     "an identical retry of alice's 'fid-1' after completion made another job"),
    ("no-replay-header", {"identical_retry_replayed", "one_job_per_intent"},
     "without saying it is a replay (no replay header)"),
])
def test_replay_fidelity_catches_each_flaw(
        start_service: Start, profiled: Callable[..., Target], detection: dict[str, Scenario],
        flaw: str, checkers: set[str], message: str) -> None:
    target = profiled(start_service("gap", "--flaws", flaw).url)
    ts = run_trials(detection["replay_fidelity"], target, trials=1)
    assert {failure.partition(":")[0] for failure in _rates(ts)} == checkers
    assert any(message in m for m in _messages(ts, "identical_retry_replayed"))


def test_byte_level_keys_are_judged_as_the_profile_declares(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    scenario = detection["replay_fidelity"]
    url = start_service("correct", "--fingerprint", "bytes").url
    assert run_trials(scenario, profiled(url, fingerprint="bytes")).status == "held"
    ts = run_trials(scenario, profiled(url))  # canonical promised, bytes compared
    assert "rejected as a different payload (422)" in \
        _messages(ts, "identical_retry_replayed")[0]


def test_side_effects_by_sql_and_a_fault_by_command(
        start_service: Start, profiled: Callable[..., Target], detection: dict[str, Scenario],
        tmp_path: Path) -> None:
    flag = tmp_path / "fail-next"
    fault = {"handler_error": {"command": ["touch", str(flag)]}}
    for kind, flaws in (("correct", []), ("gap", ["--flaws", "store-gap", "--store-ms", STORE_MS])):
        service = start_service(kind, "--fail-file", str(flag), *flaws, process=True)
        db = f"sqlite:///{service.db}"
        target = profiled(service.url, SQL_PROFILE, env={"JOBS_DB": db}, faults=fault)
        failure = run_trials(detection["handler_failure"], target)
        assert failure.status == "held", (kind, _rates(failure), failure.unknowns())
        counted = [op.value["count"] for op in failure.all_runs[0].history
                   if op.f == "side_effects" and op.type == "ok"]
        assert counted[1] - counted[0] == 1  # the failed request made nothing, the retry one
        arrivals = run_trials(detection["duplicate_arrivals"], target, trials=2,
                              patterns=["straddle"])  # timed to land in the gap
        broke = "one_side_effect_per_click" in _rates(arrivals)
        assert broke is (kind == "gap"), _rates(arrivals)
