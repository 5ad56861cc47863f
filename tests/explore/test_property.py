"""Explore inside a Hypothesis test: the failure shrinks, and ``@reproduce_failure`` replays
the very same history."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import Phase, given, reproduce_failure, settings
from hypothesis import strategies as st

from harness.explore import Controller, RaceFound, explore_schedule
from harness.explore.controller import ScheduleRun
from harness.explore.target import explore_store


def test_a_race_shrinks_and_reproduce_failure_replays_it(tmp_path: Path) -> None:
    url = f"mutant:check-then-insert@sqlite:///{tmp_path / 'p.db'}"
    with explore_store(url) as (store, _), Controller(store) as controller:

        def body(data: st.DataObject) -> None:
            explore_schedule(data, controller, workload="double-click")

        searching = settings(database=None, derandomize=True, print_blob=True, deadline=None,
                             max_examples=100, phases=[Phase.generate, Phase.shrink])(
            given(st.data())(body))
        with pytest.raises(RaceFound) as found:
            searching()
        first = found.value.outcome
        assert first.steps == 4  # two tabs: check, check, insert, insert
        assert "duplicates_get_same_job" in str(found.value)
        notes = "\n".join(getattr(found.value, "__notes__", []))
        match = re.search(r"@reproduce_failure\('([^']+)', b'([^']+)'\)", notes)
        assert match, notes
        blob = match.group(2).encode("ascii")
        again = reproduce_failure(match.group(1), blob)(
            settings(database=None, deadline=None)(given(st.data())(body)))
        with pytest.raises(RaceFound) as reproduced:
            again()
        assert reproduced.value.outcome.history_lines() == first.history_lines()


def test_the_reference_store_passes_a_hypothesis_run(tmp_path: Path) -> None:
    outcomes: list[ScheduleRun] = []
    with explore_store(f"sqlite:///{tmp_path / 'r.db'}") as (store, _), \
            Controller(store) as controller:

        @settings(database=None, derandomize=True, deadline=None, max_examples=60)
        @given(st.data())
        def holds(data: st.DataObject) -> None:
            outcomes.append(explore_schedule(data, controller))

        holds()
    # It passed because schedules ran and were judged, not because nothing did.
    assert len(outcomes) >= 30, f"only {len(outcomes)} schedules ran"
    assert {o.status for o in outcomes} == {"held"}
    assert all(o.steps > 0 and o.history and o.checks for o in outcomes)
    assert len({tuple(o.history_lines()) for o in outcomes}) > 1  # not one schedule 60 times
