"""The detection matrix: every scenario × the reference store and every mutant.

A mutant is *caught* when at least one scenario reports a violation against it; the reference
must be caught by none. ``Matrix.problems()`` lists what breaks that promise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.domain.verdicts import STATUS_WORD, Promise
from harness.scenarios.emit import detection_matrix as matrix_event
from harness.scenarios.model import Scenario
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.targets.stores import StoreTarget
from harness.store.mutants import MUTANTS

REFERENCE = "reference"


@dataclass
class Matrix:
    """Statuses by (store, scenario); stores are ``reference`` and the mutant names."""

    scenarios: list[str]
    stores: list[str]
    cells: dict[tuple[str, str], RunResult] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def status(self, store: str, scenario: str) -> Promise:
        return self.cells[(store, scenario)].status

    def caught_by(self, store: str) -> list[str]:
        return [s for s in self.scenarios if self.status(store, s) == "broken"]

    def problems(self) -> list[str]:
        """Why the matrix fails its promise (empty when every mutant is caught, the
        reference by none, and no verdict is unknown)."""
        found = []
        for scenario in self.scenarios:
            status = self.status(REFERENCE, scenario)
            if status in ("broken", "unknown"):
                found.append(f"the reference store is {STATUS_WORD[status]} by {scenario}")
        for store in self.stores:
            if store != REFERENCE and not self.caught_by(store):
                found.append(f"mutant {store} is caught by no scenario")
        return found

    def render(self) -> str:
        """A plain-text table: scenarios down, stores across (its event's table)."""
        return matrix_event(self).table()


def detection_matrix(
    scenarios: Sequence[Scenario],
    database: str | None = None,
    *,
    mutants: Sequence[str] | None = None,
    seed: int | None = None,
    on_cell: Callable[[str, RunResult], None] | None = None,
) -> Matrix:
    """Run every scenario against the reference and each mutant on ``database``
    (None: a temporary SQLite file per store). Runs never see each other: keys and ids are
    unique per run."""
    names = list(MUTANTS) if mutants is None else list(mutants)
    matrix = Matrix([s.name for s in scenarios], [REFERENCE, *names])
    started = time.perf_counter()
    for store in matrix.stores:
        target = StoreTarget(database, mutant=None if store == REFERENCE else store)
        try:
            for scenario in scenarios:
                result = run_scenario(scenario, target, seed=seed)
                matrix.cells[(store, scenario.name)] = result
                if on_cell:
                    on_cell(store, result)
        finally:
            target.close()
    matrix.elapsed_s = time.perf_counter() - started
    return matrix
