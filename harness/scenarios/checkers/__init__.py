"""Checkers: pure functions of a history, each named for the promise it guards.

``run_checkers(names, history)`` runs them; ``verdict_of(results)`` folds their verdicts into
the run's status: ``violated`` if any is invalid, else ``unknown`` if any is unknown, else
``passed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.scenarios.checkers import (  # noqa: F401 - register
    attempts,
    claims,
    fidelity,
    jobs,
    liveness,
    losers,
    scripted,
    side_effects,
)
from harness.scenarios.checkers.base import (
    CHECKERS,
    PROMISES,
    Checker,
    CheckResult,
    Verdict,
    Violation,
)
from harness.scenarios.history import Op


def run_checkers(names: Iterable[str], history: Sequence[Op]) -> list[CheckResult]:
    """Run the named checkers on ``history``, in the order given."""
    return [CHECKERS[name](history) for name in names]


def verdict_of(results: Iterable[CheckResult]) -> str:
    """``violated`` | ``unknown`` | ``passed``."""
    verdicts = {r.verdict for r in results}
    if "invalid" in verdicts:
        return "violated"
    if "unknown" in verdicts:
        return "unknown"
    return "passed"


__all__ = [
    "CHECKERS",
    "PROMISES",
    "CheckResult",
    "Checker",
    "Verdict",
    "Violation",
    "run_checkers",
    "verdict_of",
]
