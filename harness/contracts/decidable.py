"""Can a contract's certification plan decide at all? A fixed run of K samples × inputs whose
every answer passes still cannot certify when the lower confidence bound of n/n stays below the
threshold (3 inputs × 3 samples at 0.9 and 95 %: 9/9 has a lower bound of 0.717). Said when the
contract loads, and used to pick ``--adaptive`` (and to write fix commands that decide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from harness.contracts.model import Contract
from harness.contracts.stats import Rule, decide

MAX_LOOK = 100_000


@lru_cache(maxsize=64)
def samples_to_pass(threshold: float, confidence: float, rule: Rule) -> int | None:
    """The fewest samples that certify when every one passes (None: none up to MAX_LOOK)."""
    lo, hi = 1, 1
    while decide(hi, hi, threshold, confidence, rule) != "held":
        lo, hi = hi, hi * 2
        if hi > MAX_LOOK:
            return None
    while hi - lo > 1:  # the bounds shrink as n grows: bisect the first n that passes
        mid = (lo + hi) // 2
        if decide(mid, mid, threshold, confidence, rule) == "held":
            hi = mid
        else:
            lo = mid
    return hi if decide(lo, lo, threshold, confidence, rule) != "held" else lo


@dataclass(frozen=True)
class PlanCheck:
    """Whether ``contract``'s fixed plan, and its adaptive budget, can certify a perfect
    provider; ``needed`` samples (``per_input`` rounds) would."""

    contract: str
    inputs: int
    samples: int
    needed: int | None
    adaptive_needed: int | None
    budget: int
    threshold: float = 0.9
    confidence: float = 0.95

    @property
    def fixed_decides(self) -> bool:
        return self.needed is not None and self.inputs * self.samples >= self.needed

    @property
    def adaptive_decides(self) -> bool:
        return self.adaptive_needed is not None and self.budget >= self.adaptive_needed

    @property
    def per_input(self) -> int | None:
        return None if self.needed is None else math.ceil(self.needed / max(self.inputs, 1))

    def text(self) -> str:
        """One sentence for the user; empty when the fixed plan decides."""
        if self.fixed_decides:
            return ""
        n = self.inputs * self.samples
        head = (f"contract {self.contract!r}: its fixed plan ({self.inputs} golden inputs × "
                f"samples: {self.samples} = {n}) cannot certify at threshold {self.threshold:g} "
                f"and confidence {self.confidence:g} even if every answer passes")
        need = (f"; it needs {self.needed} samples (samples: {self.per_input})"
                if self.needed is not None else "")
        how = ("; certify samples adaptively (--adaptive) instead" if self.adaptive_decides
               else f"; --adaptive needs {self.adaptive_needed} within budget: {self.budget}")
        return head + need + how


def plan_check(contract: Contract) -> PlanCheck:
    t = contract.thresholds
    inputs = len(contract.goldens)
    return PlanCheck(
        contract.id, inputs, t.samples,
        samples_to_pass(t.pass_threshold, t.confidence, "clopper-pearson"),
        samples_to_pass(t.pass_threshold, t.confidence, "mixture-sprt"),
        t.budget_for(inputs), t.pass_threshold, t.confidence,
    )


def needs_adaptive(contracts: list[Contract]) -> list[PlanCheck]:
    """The contracts (each once) whose fixed plan cannot certify even a perfect provider."""
    checks = {c.id: plan_check(c) for c in contracts}
    return [c for c in checks.values() if not c.fixed_decides]
