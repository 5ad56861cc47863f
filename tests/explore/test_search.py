"""The search: the reference store holds for 2,000 schedules per workload; each mutant's race is
found; exhaustive search enumerates every interleaving; Hypothesis finds and shrinks."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.explore.choices import PrefixChoices, next_prefix
from harness.explore.controller import Controller
from harness.explore.plan import SmallestDraw
from harness.explore.search import SearchSettings, search
from harness.explore.shrink import shrink
from harness.explore.target import explore_store
from harness.explore.workloads import WORKLOADS, build_plan
from tests._affinity import one_core
from tests.explore.conftest import Open

# The reference store on PostgreSQL, as on SQLite: 2,000 schedules per workload (each step is a
# round trip and a lock-wait probe: about 100 s for the four workloads on 2 cores).
PG_REFERENCE_SCHEDULES = 2000

MUTANT_RACES = {
    "check-then-insert": ("double-click", "duplicates_get_same_job"),
    "no-fingerprint": ("mismatch", "mismatch_rejected_unchanged"),
    "last-write-wins": ("claims", "results_never_overwritten"),
    "cancelled-can-win": ("claims", "cancelled_never_wins"),
    "timeout-marks-failed": ("timeouts", "timeout_unknown_blocks"),
    "no-attempt-gate": ("timeouts", "open_attempts_bounded"),
    "owner-leak": ("double-click", "owners_isolated"),
}


@pytest.mark.slow
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_the_reference_store_holds_for_2000_schedules_on_sqlite(tmp_path: Path,
                                                                 workload: str) -> None:
    with explore_store(f"sqlite:///{tmp_path / 'ref.db'}") as (store, _), \
            Controller(store) as controller, one_core():
        found = search(controller, SearchSettings(workload=workload, budget=2000, seed=2026,
                                            clients=4))
    assert found.outcome is None, found.outcome and found.outcome.checks
    assert found.progress.schedules == 2000 and found.progress.steps > 2000 * 3


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_the_reference_store_holds_for_2000_schedules_on_postgresql(
    pg_dsn: str, workload: str
) -> None:
    with explore_store(pg_dsn) as (store, _), Controller(store) as controller, one_core():
        found = search(controller, SearchSettings(workload=workload, budget=PG_REFERENCE_SCHEDULES,
                                            seed=2026, clients=4))
    assert found.outcome is None, found.outcome and found.outcome.checks
    assert found.progress.schedules == PG_REFERENCE_SCHEDULES


@pytest.mark.parametrize("mutant", list(MUTANT_RACES))
def test_every_mutant_is_caught_by_its_workload(tmp_path: Path, mutant: str) -> None:
    workload, promise = MUTANT_RACES[mutant]
    with explore_store(f"mutant:{mutant}@sqlite:///{tmp_path / 'm.db'}") as (store, _), \
            Controller(store) as controller:
        found = search(controller, SearchSettings(workload=workload, budget=200, seed=5))
        assert found.outcome is not None, f"{mutant} was not caught in 200 schedules"
        shrunk = shrink(controller, found.outcome, hypothesis_examples=60)
    assert promise in found.outcome.broken + shrunk.outcome.broken
    assert shrunk.outcome.steps <= found.outcome.steps


def test_exhaustive_search_walks_every_interleaving_once(open_controller: Open) -> None:
    controller = open_controller()
    plan = build_plan("double-click", SmallestDraw(), 2)
    seen = set()
    prefix: list[int] | None = []
    while prefix is not None:
        choices = PrefixChoices(prefix)
        outcome = controller.run(plan, choices)
        assert outcome.status == "held"
        seen.add(tuple(str(e["event"]) for e in outcome.schedule))
        prefix = next_prefix(choices.trail)
    # Two tabs, one insert-or-conflict each; whichever inserts second finds the job and reads
    # it back (in the same transaction, so nothing can come between): exactly two orders.
    assert seen == {("tab1: insert_job", "tab2: insert_job", "tab2: job_by_key"),
                    ("tab2: insert_job", "tab1: insert_job", "tab1: job_by_key")}


def test_exhaustive_choices_find_check_then_insert(open_controller: Open) -> None:
    controller = open_controller("check-then-insert")
    found = search(controller, SearchSettings(workload="double-click", choices="exhaustive",
                                        budget=100))
    assert found.outcome is not None and "duplicates_get_same_job" in found.outcome.broken
    assert not found.exhausted


def test_exhaustive_search_of_the_reference_ends(open_controller: Open) -> None:
    found = search(open_controller(), SearchSettings(workload="all", choices="exhaustive",
                                               budget=5000))
    assert found.outcome is None and found.exhausted
    assert found.progress.schedules > len(WORKLOADS)


def test_hypothesis_choices_find_and_shrink_last_write_wins(open_controller: Open) -> None:
    controller = open_controller("last-write-wins")
    found = search(controller, SearchSettings(workload="claims", choices="hypothesis", budget=200,
                                        seed=1))
    assert found.outcome is not None and found.shrunk_by_hypothesis
    assert found.outcome.steps <= 8
    assert {"one_winner_per_job", "results_never_overwritten"} & set(found.outcome.broken)


class _FlakyRunner:
    """Breaks the promise in the first Hypothesis example and never again for the same
    decisions: a service whose own timing decides (as a loaded machine can make it)."""

    def __init__(self, failing: object) -> None:
        self.failing = failing
        self.hypothesis_runs = 0

    def run(self, plan: object, choices: object) -> object:
        from dataclasses import replace

        from harness.explore.choices import HypothesisChoices

        if not isinstance(choices, HypothesisChoices):
            return self.failing  # the plan and preemption passes: it fails as found
        self.hypothesis_runs += 1
        choices.choose(["alice/1: GET k", "alice/2: GET k"])
        if self.hypothesis_runs == 1:
            return self.failing
        return replace(self.failing, checks=[], status="held")  # type: ignore[type-var]


def test_a_flaky_interleaving_pass_says_why_in_words_not_an_exception_name(
        open_controller: Open) -> None:
    controller = open_controller("check-then-insert")
    found = search(controller, SearchSettings(workload="double-click", budget=50, seed=3))
    assert found.outcome is not None
    shrunk = shrink(_FlakyRunner(found.outcome), found.outcome)  # type: ignore[arg-type]
    assert shrunk.note == ("interleaving pass ended early, the same decisions did not always "
                           "break the promise (the service's timing varies between runs): the "
                           "plan pass's result stands")
    assert "Flaky" not in shrunk.note
