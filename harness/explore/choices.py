"""Choice sources: who decides what runs next when more than one step or timer may.

=====================  ======================================================================
``SwarmChoices``       seeded random, swarm-style: each schedule's seed also draws the plan
                       (workload mix, faults) and a weight per client and for timers, so some
                       schedules starve a client and others fire every timer first
``RecordedChoices``    replays recorded decisions; one no longer enabled is a ``Divergence``
                       (the scenario engine's, reused)
``GuidedChoices``      follows a recorded order where it still can (for shrinking a plan)
``PrefixChoices``      exhaustive search: a fixed prefix, then the first option; ``next_prefix``
                       walks every interleaving of a small plan depth-first
``HypothesisChoices``  ``data.draw`` over the enabled options, so Hypothesis shrinks a failure
                       to the fewest decisions and ``@reproduce_failure`` works
=====================  ======================================================================

Every source sees the labels in a fixed order (statements by client, then timers), never the
order in which threads happened to arrive.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from harness.explore.plan import Plan
from harness.scenarios.scheduler import RecordedChoices

CLIENT_WEIGHTS = (1, 1, 2, 4, 8)
TIMER_WEIGHTS = (1, 2, 4, 8)


def client_of(label: str) -> str:
    """``"provider:A: claim_result"`` → ``"provider:A"``; timers → ``"timer"``."""
    if label.startswith("timer "):
        return "timer"
    return label.split(": ", 1)[0]


class SwarmChoices:
    """Weighted random choices; the weights are drawn once per schedule from ``rng``."""

    def __init__(self, rng: random.Random, plan: Plan) -> None:
        self.rng = rng
        self.weights = {c: rng.choice(CLIENT_WEIGHTS) for c in plan.racing_clients()}
        self.weights["timer"] = rng.choice(TIMER_WEIGHTS)

    def choose(self, enabled: Sequence[str]) -> int:
        weights = [self.weights.get(client_of(label), 1) for label in enabled]
        return self.rng.choices(range(len(enabled)), weights)[0]


class GuidedChoices:
    """The first not-yet-seen recorded event that is enabled now, else the first option."""

    def __init__(self, events: Iterable[str]) -> None:
        self.left = list(events)

    def choose(self, enabled: Sequence[str]) -> int:
        for label in self.left:
            if label in enabled:
                return list(enabled).index(label)
        return 0

    def observe(self, label: str) -> None:
        if label in self.left:
            self.left.remove(label)


class PrefixChoices:
    """Follow ``prefix``, then always the first option; remember each decision's width."""

    def __init__(self, prefix: Sequence[int] = ()) -> None:
        self.prefix = list(prefix)
        self.trail: list[tuple[int, int]] = []

    def choose(self, enabled: Sequence[str]) -> int:
        position = len(self.trail)
        pick = self.prefix[position] if position < len(self.prefix) else 0
        pick = min(pick, len(enabled) - 1)
        self.trail.append((pick, len(enabled)))
        return pick


def next_prefix(trail: Sequence[tuple[int, int]]) -> list[int] | None:
    """The next interleaving depth-first after the one ``trail`` took; None when all are done."""
    for position in range(len(trail) - 1, -1, -1):
        pick, width = trail[position]
        if pick + 1 < width:
            return [p for p, _ in trail[:position]] + [pick + 1]
    return None


class HypothesisChoices:
    """Each decision is ``data.draw(integers(0, n - 1))`` over the sorted options."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def choose(self, enabled: Sequence[str]) -> int:
        from hypothesis import strategies as st  # optional extra: explore

        return int(self.data.draw(st.integers(0, len(enabled) - 1)))


class HypothesisDraw:
    """A workload's draws from Hypothesis (smallest first, so plans shrink too)."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def integer(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st  # optional extra: explore

        return int(self.data.draw(st.integers(lo, hi)))

    def boolean(self) -> bool:
        from hypothesis import strategies as st  # optional extra: explore

        return bool(self.data.draw(st.booleans()))


def decisions(schedule: Iterable[dict[str, Any]]) -> list[str]:
    """The labels chosen where more than one option was enabled, in order."""
    return [entry["event"] for entry in schedule if "enabled" in entry]


__all__ = [
    "GuidedChoices",
    "HypothesisChoices",
    "HypothesisDraw",
    "PrefixChoices",
    "RecordedChoices",
    "SwarmChoices",
    "client_of",
    "decisions",
    "next_prefix",
]
