"""Three-state verdicts on a pass rate: eligible, ineligible or undecided, with confidence bounds.

A certification observes ``passed`` of ``samples`` answers and must say whether the provider's
true pass rate ``p`` meets the contract's ``threshold``. Two rules, both at the contract's
``confidence`` (default 0.95, so ``alpha = 0.05``):

``clopper-pearson`` (a fixed number of samples, decided once)
    The exact one-sided Clopper–Pearson bounds: ``lower`` solves
    ``P(Binomial(n, lower) >= passed) = alpha`` and ``upper`` solves
    ``P(Binomial(n, upper) <= passed) = alpha``. **pass** when ``lower >= threshold``,
    **fail** when ``upper < threshold``, otherwise **undecided**. Whatever ``p`` is,
    ``P(pass | p < threshold) <= alpha`` and ``P(fail | p >= threshold) <= alpha``.

``mixture-sprt`` (``--adaptive``: look after every round, stop when decided)
    Looking again after each round would break the fixed-sample guarantee, so the adaptive
    rule uses two one-sided mixture sequential probability ratio tests (Robbins' mixture
    martingale; the boundaries of a confidence sequence). For ``H0: p <= threshold`` it
    tracks ``M+ = ∫ L(q)/L(threshold) dq`` over a uniform prior on ``(threshold, 1]``, and
    says **pass** once ``M+ >= 1/alpha``; symmetrically ``M-`` (prior uniform on
    ``[0, threshold)``) says **fail**. Under ``H0`` the mixture is a non-negative
    supermartingale, so by Ville's inequality ``P(ever pass | p <= threshold) <= alpha`` and
    ``P(ever fail | p >= threshold) <= alpha`` — for any number of looks and any stopping
    rule. The reported bounds are the confidence sequence's: the thresholds at which ``M+``
    and ``M-`` cross ``1/alpha``.

Golden inputs differ, so the rate certified is the mean over inputs; samples are drawn in
balanced rounds (each input once per round), for which binomial bounds are conservative
(Hoeffding, 1956; and the mixture stays a supermartingale at round ends, which is where we
look). Pure maths, standard library only: the regularised incomplete beta function is a
continued fraction (Lentz), the rest is ``math.lgamma``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from harness.domain.published import from_word
from harness.domain.verdicts import DECISION_WORD, Promise

Rule = Literal["clopper-pearson", "mixture-sprt"]
RULES: tuple[Rule, ...] = ("clopper-pearson", "mixture-sprt")
MAX_MORE_SAMPLES = 1_000_000

# -- the regularised incomplete beta function I_x(a, b) ------------------------------------------


def _log_front(x: float, a: float, b: float) -> float:
    return (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x)
    )


def _continued_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz; converges for x < (a+1)/(a+b+2))."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def log_betainc(x: float, a: float, b: float) -> float:
    """``log I_x(a, b)`` for ``a, b > 0`` (``-inf`` at ``x = 0``), accurate far into the tails."""
    if x <= 0.0:
        return -math.inf
    if x >= 1.0:
        return 0.0
    if x < (a + 1.0) / (a + b + 2.0):
        return _log_front(x, a, b) + math.log(_continued_fraction(x, a, b)) - math.log(a)
    rest = math.exp(
        _log_front(x, a, b) + math.log(_continued_fraction(1.0 - x, b, a)) - math.log(b)
    )
    return math.log1p(-min(rest, 1.0)) if rest < 1.0 else -math.inf


def binom_sf(k: float, n: float, p: float) -> float:
    """``P(Binomial(n, p) >= k)`` (``k`` may be fractional: the beta-function continuation)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return math.exp(log_betainc(p, k, n - k + 1.0))


def _log_pmf(k: float, n: float, p: float) -> float:
    """``log P(Binomial(n, p) = k)`` (gamma-function continuation for fractional ``k``)."""
    out = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    if k > 0:
        out += k * math.log(p)
    if n - k > 0:
        out += (n - k) * math.log1p(-p)
    return out


# -- the two rules --------------------------------------------------------------------------------


def _bisect(predicate_low: Any, lo: float = 0.0, hi: float = 1.0, steps: int = 60) -> float:
    """The boundary in ``[lo, hi]`` where ``predicate_low`` (true below it) turns false."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if predicate_low(mid):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(passed: float, samples: float, confidence: float) -> tuple[float, float]:
    """Exact one-sided ``(lower, upper)`` bounds, each at ``confidence``."""
    alpha = 1.0 - confidence
    lower = 0.0 if passed <= 0 else _bisect(lambda p: binom_sf(passed, samples, p) < alpha)
    failed = samples - passed
    upper = 1.0 if failed <= 0 else 1.0 - _bisect(
        lambda q: binom_sf(failed, samples, q) < alpha
    )
    return lower, upper


def _cp_decision(passed: float, samples: float, threshold: float, alpha: float) -> Promise:
    # lower >= threshold  <=>  P(Bin(n, threshold) >= passed) <= alpha (monotone in p)
    if samples <= 0:
        return "unknown"
    if binom_sf(passed, samples, threshold) <= alpha:
        return "held"
    failed = samples - passed
    if binom_sf(failed, samples, 1.0 - threshold) <= alpha:  # upper < threshold
        return "broken"
    return "unknown"


def log_mixture_evidence(passed: float, samples: float, theta: float) -> tuple[float, float]:
    """``(log M+, log M-)``: evidence against ``p <= theta`` and against ``p >= theta``.

    ``M+ = P(Bin(n+1, θ) <= k) / ((n+1)(1-θ) P(Bin(n, θ) = k))`` — the uniform-prior mixture
    over ``(θ, 1]`` of the likelihood ratio ``L(q)/L(θ)`` in closed form; ``M-`` likewise over
    ``[0, θ)``: ``P(Bin(n+1, θ) >= k+1) / ((n+1) θ P(Bin(n, θ) = k))``.
    """
    k, n = passed, samples
    if n <= 0:
        return 0.0, 0.0
    log_pmf = _log_pmf(k, n, theta)
    log_n1 = math.log(n + 1.0)
    # P(Bin(n+1, θ) <= k) = P(Bin(n+1, 1-θ) >= n+1-k) = I_{1-θ}(n+1-k, k+1)
    log_le = log_betainc(1.0 - theta, n + 1.0 - k, k + 1.0)
    log_ge = log_betainc(theta, k + 1.0, n + 1.0 - k)  # P(Bin(n+1, θ) >= k+1)
    plus = log_le - log_n1 - math.log1p(-theta) - log_pmf
    minus = log_ge - log_n1 - math.log(theta) - log_pmf
    return plus, minus


def _sprt_decision(passed: float, samples: float, threshold: float, alpha: float) -> Promise:
    if samples <= 0:
        return "unknown"
    plus, minus = log_mixture_evidence(passed, samples, threshold)
    bar = math.log(1.0 / alpha)
    if plus >= bar:
        return "held"
    if minus >= bar:
        return "broken"
    return "unknown"


def confidence_sequence(passed: float, samples: float, confidence: float) -> tuple[float, float]:
    """The mixture rule's anytime-valid ``(lower, upper)`` bounds at ``confidence``."""
    bar = math.log(1.0 / (1.0 - confidence))
    eps = 1e-12
    lower = _bisect(lambda t: log_mixture_evidence(passed, samples, t)[0] >= bar, eps, 1 - eps)
    upper = _bisect(lambda t: log_mixture_evidence(passed, samples, t)[1] < bar, eps, 1 - eps)
    if log_mixture_evidence(passed, samples, eps)[0] < bar:
        lower = 0.0
    if log_mixture_evidence(passed, samples, 1 - eps)[1] < bar:
        upper = 1.0
    return lower, upper


def decide(
    passed: float, samples: float, threshold: float, confidence: float, rule: Rule
) -> Promise:
    """The rule's decision on ``passed`` of ``samples`` against ``threshold``."""
    alpha = 1.0 - confidence
    if rule == "clopper-pearson":
        return _cp_decision(passed, samples, threshold, alpha)
    return _sprt_decision(passed, samples, threshold, alpha)


def bounds(passed: float, samples: float, confidence: float, rule: Rule) -> tuple[float, float]:
    if samples <= 0:
        return 0.0, 1.0
    if rule == "clopper-pearson":
        return clopper_pearson(passed, samples, confidence)
    return confidence_sequence(passed, samples, confidence)


def more_samples_to_decide(
    passed: int, samples: int, threshold: float, confidence: float, rule: Rule
) -> int | None:
    """How many more samples would decide if the observed rate held; ``None``: none would.

    At a rate exactly on the threshold no sample count decides; past
    :data:`MAX_MORE_SAMPLES` we stop looking and say so (``None``).
    """
    if samples <= 0:
        return None
    rate = passed / samples
    if rate == threshold:
        return None

    def decided(extra: int) -> bool:
        n = samples + extra
        return decide(rate * n, n, threshold, confidence, rule) != "unknown"

    if decided(0):
        return 0
    hi = 1
    while not decided(hi):
        hi *= 2
        if hi > MAX_MORE_SAMPLES:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decided(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True, slots=True)
class RateVerdict:
    """A pass rate judged against a threshold: the decision, the bounds and the rule."""

    decision: Promise  # held (pass), broken (fail) or unknown (undecided)
    passed: int
    samples: int
    threshold: float
    confidence: float
    lower: float
    upper: float
    rule: Rule
    more_samples: int | None = None  # when undecided: how many more would decide (None: none)

    @classmethod
    def judge(
        cls, passed: int, samples: int, threshold: float, confidence: float, rule: Rule
    ) -> RateVerdict:
        decision = decide(passed, samples, threshold, confidence, rule)
        lower, upper = bounds(passed, samples, confidence, rule)
        more = (
            more_samples_to_decide(passed, samples, threshold, confidence, rule)
            if decision == "unknown"
            else None
        )
        return cls(decision, passed, samples, threshold, confidence, lower, upper, rule, more)

    @property
    def rate(self) -> float:
        return self.passed / self.samples if self.samples else 0.0

    def describe(self) -> str:
        """``58/60 (96.7%); 95% bounds [0.899, 0.994] vs threshold 0.90 → undecided: …``."""
        head = (
            f"{self.passed}/{self.samples} ({self.rate:.1%}); {self.confidence:.0%} "
            f"{'anytime ' if self.rule == 'mixture-sprt' else ''}bounds "
            f"[{self.lower:.3f}, {self.upper:.3f}] vs threshold {self.threshold:.2f}"
        )
        if self.decision == "held":
            return f"{head}: the lower bound meets it"
        if self.decision == "broken":
            return f"{head}: the upper bound is below it"
        return f"{head}: undecided; {self.more_hint()}"

    def more_hint(self) -> str:
        if self.decision != "unknown":
            return ""
        if self.more_samples is None:
            if self.samples and self.passed / self.samples == self.threshold:
                return "the observed rate equals the threshold: no number of samples would decide"
            return "no practical number of samples would decide at the observed rate"
        return f"{self.more_samples} more samples would decide at the observed rate"

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": DECISION_WORD[self.decision],
            "passed": self.passed,
            "samples": self.samples,
            "rate": round(self.rate, 4),
            "threshold": self.threshold,
            "confidence": self.confidence,
            "lower": round(self.lower, 4),
            "upper": round(self.upper, 4),
            "rule": self.rule,
            "more_samples": self.more_samples,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RateVerdict:
        decision = from_word(DECISION_WORD, data["decision"])
        if decision not in ("held", "broken", "unknown"):
            raise ValueError(f"decision must be pass, fail or undecided, not {data['decision']!r}")
        if data["rule"] not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, not {data['rule']!r}")
        return cls(
            decision, int(data["passed"]), int(data["samples"]),
            float(data["threshold"]), float(data["confidence"]), float(data["lower"]),
            float(data["upper"]), data["rule"], data.get("more_samples"),
        )
