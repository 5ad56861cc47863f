"""A trial series judged from per-trial records: split over shards (any split, any order, through
the JSON a shard's report keeps), the records judge to the series of the whole set — rates and
histograms summed, the first failing trial from the pattern where the failure was most frequent,
unknowns counted over every trial."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest

from harness.scenarios.events import FirstFailure, TrialSeries
from harness.scenarios.series import SeriesHead, TrialRecord, merge_series, series_of

HEAD = SeriesHead(scenario="dup", target="sqlite", seed=10, trials=4, source="dup.yaml",
                  description="", checkers=("one_job_per_intent", "loser_answers_allowed"),
                  promises=("one job per intent", "losers answered as allowed"),
                  patterns=("burst", "staggered"))


def first(trial: int, pattern: str) -> FirstFailure:
    return FirstFailure(trial=trial + 1, seed=10 + trial, pattern=pattern,
                        replay_command=f"replay {pattern} {trial}")


def record(pattern: str, trial: int, broke: bool, unknown: bool = False) -> TrialRecord:
    failures = ("one_job_per_intent:second_job",) if broke else ()
    return TrialRecord(
        pattern=pattern, trial=trial,
        status="broken" if broke else "unknown" if unknown else "held",
        broken=("one_job_per_intent",) if broke else (), failures=failures,
        losers={"same job": 2, "5xx": 1 if broke else 0}, busy={"in flight": trial},
        unknowns=(("loser_answers_allowed", "no answer", "raise the timeout"),) if unknown
        else (), fixes=("raise the timeout",) if unknown else (),
        firsts={f: first(trial, pattern) for f in failures},
        unknown_first=first(trial, pattern) if unknown else None)


#: burst breaks in trial 2 only; staggered in trials 1 and 3 (its rate is the highest, so its
#: first failing trial is the one shown); trial 0 of burst is unknown
RECORDS = [record("burst", 0, False, unknown=True), record("burst", 1, False),
           record("burst", 2, True), record("burst", 3, False),
           record("staggered", 0, False), record("staggered", 1, True),
           record("staggered", 2, False), record("staggered", 3, True)]


def shard_parts(n: int) -> list[tuple[TrialSeries, dict[str, object]]]:
    """The records dealt round-robin over ``n`` shards, each part through its JSON."""
    parts = []
    for k in range(n):
        mine = RECORDS[k::n]
        event = series_of(HEAD, mine, wall_s=1.0)
        evidence = {"kind": "trial_series", "head": json.loads(json.dumps(asdict(HEAD))),
                    "records": json.loads(json.dumps([asdict(r) for r in mine]))}
        parts.append((event, evidence))
    return parts


def test_the_whole_set_judges_as_one_series() -> None:
    whole = series_of(HEAD, RECORDS)
    assert whole.verdict == "broken"
    assert [p.trials for p in whole.patterns] == [4, 4]
    [failure] = whole.failures
    assert [(r.pattern, r.failed, r.trials) for r in failure.rates] == [
        ("burst", 1, 4), ("staggered", 2, 4)]
    assert failure.rates[1].text == "2 of 4 trials made a second job"
    assert failure.first == first(1, "staggered")  # the most frequent pattern's first
    assert [(u.count, u.first) for u in whole.unknowns] == [(1, first(0, "burst"))]
    burst = {c.answer: c.count for c in whole.patterns[0].losers}
    assert burst == {"same job": 8, "5xx": 1}


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_merged_judge_as_the_whole_set(n: int) -> None:
    parts = shard_parts(n)
    merged = merge_series(parts)
    assert replace(merged, wall_s=0.0) == series_of(HEAD, RECORDS)
    assert merge_series(list(reversed(parts))) == merged  # in any order
    assert merged.wall_s == pytest.approx(n * 1.0)
