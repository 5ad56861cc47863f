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
from harness.scenarios.events import DetectionMatrix
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
    partial: bool = False  # a shard's cells only: whether a mutant is caught is judged at merge

    def status(self, store: str, scenario: str) -> Promise | None:
        """The cell's promise (None: a cell another shard ran)."""
        cell = self.cells.get((store, scenario))
        return cell.status if cell is not None else None

    def caught_by(self, store: str) -> list[str]:
        return [s for s in self.scenarios if self.status(store, s) == "broken"]

    def problems(self) -> list[str]:
        """Why the matrix fails its promise (empty when every mutant is caught, the
        reference by none, and no verdict is unknown)."""
        return matrix_problems(self.scenarios, self.stores, self.status, partial=self.partial)

    def render(self) -> str:
        """A plain-text table: scenarios down, stores across (its event's table)."""
        return matrix_event(self).table()


def matrix_problems(scenarios: Sequence[str], stores: Sequence[str],
                    status: Callable[[str, str], Promise | None], *,
                    partial: bool = False) -> list[str]:
    """The reference flagged by a scenario, and (unless ``partial``: a shard's cells) every
    mutant no scenario caught."""
    found = []
    for scenario in scenarios:
        said = status(REFERENCE, scenario)
        if said in ("broken", "unknown"):
            found.append(f"the reference store is {STATUS_WORD[said]} by {scenario}")
    for store in stores if not partial else ():
        if store != REFERENCE and not any(status(store, s) == "broken" for s in scenarios):
            found.append(f"mutant {store} is caught by no scenario")
    return found


def merge_matrices(parts: Sequence[DetectionMatrix]) -> DetectionMatrix:
    """The matrix of a run from its shards' cells, judged again as one run judges it."""
    first = parts[0]
    cells = {(c.target, c.scenario): c for part in parts for c in part.cells}

    def status(store: str, scenario: str) -> Promise | None:
        cell = cells.get((store, scenario))
        return cell.verdict if cell is not None else None

    problems = tuple(matrix_problems(first.scenarios, first.targets, status))
    return DetectionMatrix(
        scenarios=first.scenarios, targets=first.targets,
        cells=tuple(cells[(t, s)] for s in first.scenarios for t in first.targets
                    if (t, s) in cells),
        outcome="fail" if problems else "pass", reference=first.reference, problems=problems,
        wall_s=sum(p.wall_s for p in parts))


def detection_matrix(
    scenarios: Sequence[Scenario],
    database: str | None = None,
    *,
    mutants: Sequence[str] | None = None,
    seed: int | None = None,
    on_cell: Callable[[str, RunResult], None] | None = None,
    owns: Callable[[int], bool] | None = None,
) -> Matrix:
    """Run every scenario against the reference and each mutant on ``database``
    (None: a temporary SQLite file per store). Runs never see each other: keys and ids are
    unique per run. ``owns``: a shard's part — only the cells whose position (store-major:
    store *s*, scenario *i* is ``s × scenarios + i``) it owns run."""
    names = list(MUTANTS) if mutants is None else list(mutants)
    matrix = Matrix([s.name for s in scenarios], [REFERENCE, *names], partial=owns is not None)
    started = time.perf_counter()
    for number, store in enumerate(matrix.stores):
        mine = [s for i, s in enumerate(scenarios)
                if owns is None or owns(number * len(scenarios) + i)]
        if not mine:
            continue
        target = StoreTarget(database, mutant=None if store == REFERENCE else store)
        try:
            for scenario in mine:
                result = run_scenario(scenario, target, seed=seed)
                matrix.cells[(store, scenario.name)] = result
                if on_cell:
                    on_cell(store, result)
        finally:
            target.close()
    matrix.elapsed_s = time.perf_counter() - started
    return matrix
