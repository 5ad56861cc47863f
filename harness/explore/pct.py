"""PCT: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS
2010), a choice source with a guarantee.

Each client (the part of a label before ``": "``; timers and retries count as clients of their
own) gets a random priority above ``d``; ``d - 1`` *change points* are drawn among the first
``k`` steps. At every decision the enabled client with the highest priority runs; after the
*i*-th change point the client that just ran drops to priority ``d - i``, below every initial
one. A bug of *depth* ``d`` — one that needs ``d`` events in a given order, such as "the
duplicate reads, *then* the first request finishes and unlocks, *then* the duplicate locks" (depth
2: one preemption) — is found by one schedule with probability at least ``1 / (n · k^(d-1))``
for ``n`` clients and ``k`` steps; :func:`bound` gives it, and the search prints it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from harness.explore.choices import client_of


def bound(clients: int, steps: int, depth: int) -> float:
    """The probability that one PCT schedule finds a given bug of ``depth``, at least."""
    return 1.0 / (max(1, clients) * max(1, steps) ** max(0, depth - 1))


class PctChoices:
    """One PCT schedule: priorities and change points drawn from ``rng``."""

    def __init__(self, rng: random.Random, *, depth: int, steps: int) -> None:
        self.rng = rng
        self.depth = max(1, depth)
        self.priority: dict[str, float] = {}
        picks = min(self.depth - 1, max(1, steps))
        self.changes = sorted(rng.sample(range(1, max(1, steps) + 1), picks)) if picks else []
        self.step = 0
        self.lowered = 0

    def _priority(self, client: str) -> float:
        if client not in self.priority:  # above d: every lowered priority is below
            self.priority[client] = self.depth + self.rng.random()
        return self.priority[client]

    def choose(self, enabled: Sequence[str]) -> int:
        ranked = [self._priority(client_of(label)) for label in enabled]
        return max(range(len(enabled)), key=lambda i: (ranked[i], -i))

    def observe(self, label: str) -> None:
        """Called for every event, chosen or forced: counts steps, applies change points."""
        self.step += 1
        while self.lowered < len(self.changes) and self.changes[self.lowered] <= self.step:
            self.lowered += 1
            self.priority[client_of(label)] = self.depth - self.lowered


__all__ = ["PctChoices", "bound"]
