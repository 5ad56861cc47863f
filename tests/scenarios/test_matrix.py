"""The detection matrix: every mutant caught by a scenario, the reference by none — on SQLite
and on PostgreSQL (one shared database: keys and ids are unique per run)."""

from __future__ import annotations

import pytest

from harness.scenarios.matrix import REFERENCE, detection_matrix
from harness.scenarios.model import Scenario
from harness.store.mutants import MUTANTS

# The scenario written for each mutant's rule must be among those that catch it.
WRITTEN_FOR = {
    "check-then-insert": "double_click",
    "no-fingerprint": "mismatched_key",
    "timeout-marks-failed": "timeout_unknown",
    "no-attempt-gate": "crash_mid_attempt",
    "last-write-wins": "out_of_order_completion",
    "cancelled-can-win": "cancel_then_late_result",
    "owner-leak": "same_key_other_owner",
}


def _assert_matrix(shipped: dict[str, Scenario], database: str | None) -> None:
    matrix = detection_matrix(list(shipped.values()), database)
    assert matrix.problems() == [], "\n" + matrix.render()
    assert set(WRITTEN_FOR) == set(MUTANTS)
    for mutant, scenario in WRITTEN_FOR.items():
        assert scenario in matrix.caught_by(mutant), "\n" + matrix.render()
    for name in shipped:
        assert matrix.status(REFERENCE, name) in ("held", "not_applicable")
    assert matrix.status(REFERENCE, "triple_click_across_replicas") == "not_applicable"
    assert sum(matrix.status(REFERENCE, n) == "held" for n in shipped) == len(shipped) - 1


def test_matrix_on_sqlite(shipped: dict[str, Scenario]) -> None:
    _assert_matrix(shipped, None)


@pytest.mark.postgres
def test_matrix_on_postgresql(shipped: dict[str, Scenario], pg_dsn: str) -> None:
    _assert_matrix(shipped, pg_dsn)


def test_the_rendered_matrix_shows_every_cell(shipped: dict[str, Scenario]) -> None:
    two = [shipped["double_click"], shipped["mismatched_key"]]
    matrix = detection_matrix(two, None, mutants=["no-fingerprint"])
    lines = matrix.render().splitlines()
    assert lines[0].split() == ["reference", "no-fingerprint"]
    assert lines[1].split() == ["double_click", "pass", "pass"]
    assert lines[2].split() == ["mismatched_key", "pass", "CAUGHT"]
