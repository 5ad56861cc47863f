"""``failover-harness scenarios run scenarios/detection --target http://… --target-profile F``
against the example services as separate processes: the report names each failure a service
has, with its rate per pattern, and the commands that reproduce it — and they do."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from harness.cli import main
from tests.detection.conftest import DETECTION, PROFILE, Start

GAP_FLAWS = "store-gap,sticky-lock,raw-body-key,no-replay-header"
CONFLICT_FLAWS = "conflict-losers,cache-5xx,mutated-fingerprint"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    out, _ = capsys.readouterr()
    return code, out


def _scenarios_run(url: str, report: Path, *extra: str) -> list[str]:
    # --verbose: every failure's detail as it comes (without it, a summary by promise)
    return ["scenarios", "run", str(DETECTION), "--target", url, "--target-profile",
            str(PROFILE), "--report-dir", str(report), "--verbose", *extra]


@pytest.mark.slow
def test_the_report_names_each_failure_with_its_rate_and_how_to_reproduce_it(
        start_service: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gap = start_service("gap", "--flaws", GAP_FLAWS, "--store-ms", "60", process=True)
    code, out = _run(_scenarios_run(gap.url, tmp_path, "--trials", "2"), capsys)
    assert code == 1, out
    for failure in (
            "the handler ran again for a duplicate (a second side effect)  "
            "[one_side_effect_per_click]",
            "a key stuck in progress after a handler failure  [retry_after_failure_served]",
            "a key held in progress past its lease  [in_progress_within_lease]",
            "a replay not marked as a replay  [identical_retry_replayed]",
            "a new job for the same intent sent again  [identical_retry_replayed]",
            "a second job for one click  [one_job_per_intent]",
            "201 created answered more than once for one click  [one_job_per_intent]"):
        assert f"FAILURE: {failure}" in out
    rates = [re.search(rf"    {pattern}: (\d) of 2 trials made a second side effect", out)
             for pattern in ("burst", "staggered", "straddle")]
    assert all(rates) and sum(int(r.group(1)) for r in rates if r) >= 3
    assert re.search(r"    2 of 2 trials kept a key in progress after the handler failed", out)
    assert re.search(r"    2 of 2 trials replayed without saying it is a replay", out)
    assert "without saying it is a replay (no replay header)" in out
    assert re.search(r"still held in progress \d+(\.\d+)? ms later \(lease 500 ms\)", out)
    assert "4 scenarios: 0 passed, 4 violated" in out
    replays = re.findall(r"run this trial again: (failover-harness replay .*)", out)
    measures = re.findall(r"measure the rate again: (failover-harness scenarios run .*)", out)
    assert len(replays) == len(measures) == out.count("FAILURE: ")
    stuck = next(r for r in replays if "handler_failure" in r)
    words = shlex.split(stuck)
    assert words[3:] == ["--target", gap.url, "--target-profile", str(PROFILE)]
    code, again = _run([*words[1:], "--report-dir", str(tmp_path / "replays")], capsys)
    assert code == 1 and "the key is stuck" in again
    measure = shlex.split(next(m for m in measures if "--arrival" in m))
    pattern = measure[-5]
    assert measure[-6:] == ["--arrival", pattern, "--trials", "2", "--seed", "0"]
    code, again = _run([*measure[1:], "--report-dir", str(tmp_path / "again")], capsys)
    others = {"burst", "staggered", "straddle"} - {pattern}
    assert code == 1 and f"  {pattern} " in again
    assert not any(f"  {other} " in again for other in others)
    results = json.loads((tmp_path / "latest" / "results.json").read_text())
    series = {e["scenario"]: e for e in results["events"] if e["type"] == "trial_series"}
    dup = series["duplicate_arrivals"]
    side_effect = next(f for f in dup["failures"] if f["id"] == "one_side_effect_per_click")
    assert {r["pattern"] for r in side_effect["rates"]} == {"burst", "staggered", "straddle"}
    assert side_effect["first"]["replay_command"] in replays
    burst = next(p for p in dup["patterns"] if p["pattern"] == "burst")
    assert {b["answer"]: b["count"] for b in burst["losers"]}["created"] == 2


def test_refusals_cached_errors_and_rejected_retries_are_named(
        start_service: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = start_service("gap", "--flaws", CONFLICT_FLAWS, process=True)
    code, out = _run(_scenarios_run(service.url, tmp_path, "--trials", "1"), capsys)
    assert code == 1, out
    assert re.search(r"burst +1 of 1 trial broke a promise; loser answers: created 1, .*"
                     r"409 conflict [1-7]", out)
    assert "409 conflict — a refusal for a request that never ran" in out
    assert "FAILURE: a server error replayed against the declared error policy" in out
    assert "was stored and answered again to the retry and marked it a replay" in out
    assert "after completion was rejected as a different payload (422)" in out


def test_the_correct_service_passes_and_exits_0(
        start_service: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    correct = start_service("correct", process=True)
    code, out = _run(_scenarios_run(correct.url, tmp_path, "--trials", "1"), capsys)
    assert code == 0, out
    assert "4 scenarios: 4 passed, 0 violated, 0 unknown" in out
    assert "FAILURE" not in out


def test_bad_trial_options_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["scenarios", "run", "--arrival", "trickle"])
    assert caught.value.code == 2
    assert "write one or more of burst, staggered, straddle" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["scenarios", "run", "--trials", "0"])
    assert "a whole number from 1 to 1000" in capsys.readouterr().err
