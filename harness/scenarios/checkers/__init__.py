"""Checkers: pure functions of a history, each named for the promise it guards.

``run_checkers(names, history)`` runs them; ``verdict_of(results)`` folds their verdicts into
the run's status: ``violated`` if any is invalid, else ``unknown`` if any is unknown, else
``passed``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from harness.domain.verdicts import Promise
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
    DEFAULT_TERMS,
    EVIDENCE,
    PROMISES,
    Checker,
    CheckResult,
    EvidenceNeed,
    Verdict,
    Violation,
    promise_text,
)
from harness.scenarios.history import Op, pairs


def run_checkers(
    names: Iterable[str],
    history: Sequence[Op],
    *,
    terms: Mapping[str, str] | None = None,
    require_evidence: bool = False,
    optional: Collection[str] = (),
) -> list[CheckResult]:
    """Run the named checkers on ``history``, in the order given. ``terms`` names the target's
    answers in promises and messages; with ``require_evidence``, a checker (other than those in
    ``optional``) whose evidence the history lacks is unknown."""
    items = pairs(history)  # once for every checker
    return [CHECKERS[name](history, terms, require_evidence and name not in optional, items)
            for name in names]


def verdict_of(results: Iterable[CheckResult]) -> Promise:
    """``violated`` | ``unknown`` | ``passed``: the run's status by its checks."""
    verdicts = {r.verdict for r in results}
    if "broken" in verdicts:
        return "broken"
    if "unknown" in verdicts:
        return "unknown"
    return "held"


__all__ = [
    "CHECKERS",
    "DEFAULT_TERMS",
    "EVIDENCE",
    "PROMISES",
    "CheckResult",
    "Checker",
    "EvidenceNeed",
    "Verdict",
    "Violation",
    "promise_text",
    "run_checkers",
    "verdict_of",
]
