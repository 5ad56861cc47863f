"""What the drill's judge says of one intent: a :class:`Finding` per promise (held, broken or
unknown, with the evidence, or the reason and the fix) and the intent's :class:`IntentVerdict`;
the promises' names and texts (:data:`PROMISES`; docs/drill.md, "The promises"). The judging
itself is :mod:`harness.drill.judge`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.domain.verdicts import Promise, Verdict
from harness.drill.evidence import IntentEvidence

PROMISES: dict[str, str] = {
    "one_job_per_intent": "one job per intent",
    "timeout_not_failure": "a timeout is not a failure",
    "within_hedge": "no attempt beyond the declared hedge while an outcome is unknown",
    "one_winner_per_job": "one winner, and a complete result never changes",
    "no_call_after_completion": "no provider call after the job was observed complete",
    "billed_within_bound": "billed provider calls per intent within the declared bound",
    "cut_not_success": "a cut stream never reaches the client as a success",
    "completed": "the intent completes with a provider's whole answer",
    "fallback_certified": "the fallback reached is certified for the contract",
}
ONE_JOB, ONE_WINNER = "one_job_per_intent", "one_winner_per_job"


@dataclass(frozen=True, slots=True)
class Finding:
    """One promise's verdict on one intent."""

    promise: str
    verdict: Promise
    message: str = ""
    fix: str = ""
    load: str = ""  # an unknown the load left (no evidence): why, in a few words (causes.py)


@dataclass
class IntentVerdict:
    evidence: IntentEvidence
    findings: list[Finding] = field(default_factory=list)
    winner: str | None = None  # the call whose answer the intent ended with ("gpt#3")
    answered_by: str | None = None  # the provider whose answer the client got, and who says so
    #: the intents of the same trial this one replaced, oldest first: each broke nothing and
    #: was unknown only for the load (:mod:`harness.drill.again`)
    earlier: list[IntentVerdict] = field(default_factory=list)

    @property
    def retries(self) -> tuple[int, int]:
        """(provider calls after the first, how many of them carried an idempotency key)."""
        later = sorted(self.evidence.calls, key=lambda c: c.at)[1:]
        return len(later), sum(c.keyed for c in later)

    @property
    def verdict(self) -> Verdict:
        kinds = {f.verdict for f in self.findings}
        return "fail" if "broken" in kinds else "unknown" if "unknown" in kinds else "pass"

    def of(self, promise: str) -> Finding | None:
        return next((f for f in self.findings if f.promise == promise), None)
