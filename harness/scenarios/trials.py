"""Trials: run a scenario N times per arrival pattern and measure how often each promise breaks.

A race against a real service is won or lost by milliseconds, so one run proves little: a
scenario with ``arrival: {patterns: […], trials: N}`` (or ``scenarios run --arrival … --trials
N``) runs N times per pattern. Trial *i* runs with seed ``seed + i``, which fixes its schedule of
arrivals, so any single trial can be run again. The result is a detection rate per failure and
pattern — "3 of 60 trials made a second job" — and a histogram of loser answers per pattern.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.domain.verdicts import Promise
from harness.domain.words import of
from harness.scenarios.checkers.base import PROMISES
from harness.scenarios.checkers.losers import busy_answers, loser_classes, merge
from harness.scenarios.model import SEQUENTIAL, Scenario, trial_count, trial_patterns
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.targets.base import Target

#: how a trial that breaks a promise is counted: "<k> of <n> trials <phrase>", by failure
#: (``checker`` or ``checker:kind`` when the checker says how it broke)
RATE_PHRASES = {
    "one_job_per_intent:second_job": "made a second job",
    "one_job_per_intent:created_twice": "answered 201 created to more than one request",
    "identical_retry_replayed:rejected": "rejected an identical retry as a different payload",
    "identical_retry_replayed:another_job": "made a new job for an identical retry",
    "identical_retry_replayed:unmarked": "replayed without saying it is a replay",
    "identical_retry_replayed:refused": "refused an identical retry",
    "one_job_per_intent": "made a second job",
    "one_side_effect_per_click": "made a second side effect",
    "duplicates_get_same_job": "answered a duplicate with an error or another job",
    "loser_answers_allowed": "answered a concurrent duplicate in a way that is not allowed",
    "retry_after_failure_served": "kept a key in progress after the handler failed",
    "in_progress_within_lease": "held a key in progress past its lease",
    "identical_retry_replayed": "did not answer an identical retry as a replay of the same job",
    "error_replay_follows_policy": "answered a retry after a handler error against the "
                                   "declared error policy",
    "mismatch_rejected_unchanged": "accepted another body under a used key",
    "mismatch_rejected_unchanged:replayed_first": "silently replayed the first job for another "
                                                  "body",
    "mismatch_rejected_unchanged:new_job": "ran a new job for another body under a used key",
    "mismatch_rejected_unchanged:refused_otherwise": "refused another body under a used key "
                                                     "with the wrong answer",
    "scripted_outcomes": "broke a scripted expectation",
}
#: what each failure is called in a report
FAILURE_TITLES = {
    "one_job_per_intent:second_job": "a second job for one click",
    "one_job_per_intent:created_twice": "201 created answered more than once for one click",
    "identical_retry_replayed:rejected": "an identical retry rejected as a different payload",
    "identical_retry_replayed:another_job": "a new job for the same intent sent again",
    "identical_retry_replayed:unmarked": "a replay not marked as a replay",
    "identical_retry_replayed:refused": "an identical retry refused",
    "one_job_per_intent": "a second job for one click",
    "one_side_effect_per_click": "the handler ran again for a duplicate (a second side effect)",
    "duplicates_get_same_job": "a duplicate answered with an error or another job",
    "loser_answers_allowed": "a concurrent duplicate answered with a refusal, an error or "
                             "another job",
    "retry_after_failure_served": "a key stuck in progress after a handler failure",
    "in_progress_within_lease": "a key held in progress past its lease",
    "identical_retry_replayed": "a retry after completion not answered as a replay",
    "error_replay_follows_policy": "a server error replayed against the declared error policy",
    "mismatch_rejected_unchanged": "another body accepted under a used key",
    "mismatch_rejected_unchanged:replayed_first": "another body under a used key silently "
                                                  "answered with the first job",
    "mismatch_rejected_unchanged:new_job": "another body under a used key ran a new job",
    "mismatch_rejected_unchanged:refused_otherwise": "another body under a used key refused "
                                                     "with an unexpected answer",
}


def failure_id(checker: str, kind: str = "") -> str:
    """``checker``, or ``checker:kind`` for a checker that says how it broke."""
    return f"{checker}:{kind}" if kind else checker


def rate_phrase(failure: str) -> str:
    checker, _, kind = failure.partition(":")
    if failure in RATE_PHRASES:
        return RATE_PHRASES[failure]
    if checker == "loser_answers_allowed" and kind:
        return f"answered a concurrent duplicate: {kind}"
    return RATE_PHRASES.get(checker, f"broke {checker}") + (f" ({kind})" if kind else "")


def failure_title(failure: str) -> str:
    checker, _, kind = failure.partition(":")
    if failure in FAILURE_TITLES:
        return FAILURE_TITLES[failure]
    if checker == "loser_answers_allowed" and kind:
        return f"a concurrent duplicate answered '{kind}'"
    title = FAILURE_TITLES.get(checker, checker.replace("_", " "))
    return f"{title} ({kind})" if kind else title


def trial_seed(seed: int, trial: int) -> int:
    """The seed of trial ``trial`` (0-based): it fixes that trial's schedule of arrivals."""
    return seed + trial


@dataclass(frozen=True, slots=True)
class Rate:
    """How many trials of one pattern showed one failure (``checker`` or ``checker:kind``),
    and the first that did."""

    failure: str
    pattern: str
    failed: int
    trials: int
    first: RunResult | None

    @property
    def checker(self) -> str:
        return self.failure.partition(":")[0]

    @property
    def text(self) -> str:
        return f"{of(self.failed, self.trials, 'trial')} {rate_phrase(self.failure)}"


@dataclass
class TrialSet:
    """Every trial of one scenario: runs by pattern, in trial order."""

    scenario: Scenario
    target: str
    seed: int
    trials: int
    patterns: tuple[str, ...]
    runs: dict[str, list[RunResult]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    reason: str | None = None
    folder: Any = None  # the summary file, once written

    @property
    def all_runs(self) -> list[RunResult]:
        return [r for p in self.patterns for r in self.runs.get(p, [])]

    @property
    def status(self) -> Promise:
        statuses = {r.status for r in self.all_runs}
        if not statuses or statuses == {"not_applicable"}:
            return "not_applicable"
        for status in ("broken", "unknown"):
            if status in statuses:
                return status
        return "held"

    def rate(self, failure: str, pattern: str) -> Rate:
        """The rate of ``failure``: a checker (any way it broke) or ``checker:kind``."""
        runs = self.runs.get(pattern, [])
        failing = [r for r in runs if _broke(r, failure)]
        return Rate(failure, pattern, len(failing), len(runs), failing[0] if failing else None)

    def failures(self) -> dict[str, dict[str, Rate]]:
        """Failure → pattern → rate, for each failure some trial showed (in checker order, then
        in the order the kinds first appeared)."""
        found: dict[str, None] = {}
        for checker in self.scenario.checkers:
            for run in self.all_runs:
                for check in run.checks:
                    if check.checker == checker and check.verdict == "broken":
                        found.update({failure_id(checker, v.kind): None for v in check.violations})
        return {f: {p: self.rate(f, p) for p in self.patterns} for f in found}

    def violated(self, pattern: str) -> int:
        return sum(r.status == "broken" for r in self.runs.get(pattern, []))

    def histogram(self, pattern: str) -> Counter[str]:
        """The loser answers of every trial of ``pattern``, by class."""
        return merge(loser_classes(r.history) for r in self.runs.get(pattern, []))

    def busy(self, pattern: str) -> Counter[str]:
        """The busy answers (in flight, locked) the losers of ``pattern`` got before their
        final answer, over every trial."""
        return merge(busy_answers(r.history) for r in self.runs.get(pattern, []))

    def unknowns(self) -> Counter[str]:
        """Why verdicts were unknown, with how many trials said so (a step that did not happen
        counts too: such a run is unknown)."""
        reasons: Counter[str] = Counter()
        for run in self.all_runs:
            for check in run.checks:
                if check.verdict == "unknown":
                    reasons.update({f"{check.checker}: {u}" for u in check.unknowns})
            reasons.update({f"did not happen: {u['why']}" for u in run.unrun})
        return reasons

    def fixes(self) -> list[str]:
        """What the user can do about the unknowns, in the order first seen."""
        found: dict[str, None] = {}
        for run in self.all_runs:
            for check in run.checks:
                if check.verdict == "unknown":
                    found.update(dict.fromkeys(check.fixes))
            found.update(dict.fromkeys(u["fix"] for u in run.unrun))
        return list(found)

    def promise(self, checker: str) -> str:
        """The promise of ``checker`` as the target's terms phrase it."""
        for run in self.all_runs:
            for check in run.checks:
                if check.checker == checker:
                    return check.promise
        return PROMISES.get(checker, checker)


def _broke(result: RunResult, failure: str) -> bool:
    checker, colon, kind = failure.partition(":")
    return any(c.checker == checker and c.verdict == "broken"
               and (not colon or any(v.kind == kind for v in c.violations))
               for c in result.checks)


def run_trials(
    scenario: Scenario,
    target: Target,
    *,
    seed: int | None = None,
    trials: int | None = None,
    patterns: Sequence[str] | None = None,
    on_run: Callable[[str, int, RunResult], None] | None = None,
    owns: Callable[[int], bool] | None = None,
) -> TrialSet:
    """Run ``scenario`` ``trials`` times per pattern on ``target``; trial *i* uses seed
    ``seed + i`` (``seed`` defaults to the scenario's). ``owns``: a shard's part — only the
    trials whose index in pattern-major order (pattern *p*, trial *i*: ``p × trials + i``) it
    owns run, with the seeds they have in the whole series."""
    seed = scenario.seed if seed is None else seed
    chosen = trial_patterns(scenario, patterns)
    count = trial_count(scenario, trials)
    result = TrialSet(scenario, target.description, seed, count, chosen)
    started = time.perf_counter()
    for number, pattern in enumerate(chosen):
        runs = result.runs.setdefault(pattern, [])
        for trial in range(count):
            if owns is not None and not owns(number * count + trial):
                continue
            run = run_scenario(scenario, target, seed=trial_seed(seed, trial),
                               arrival=None if pattern == SEQUENTIAL else pattern)
            runs.append(run)
            if on_run:
                on_run(pattern, trial, run)
            if run.status == "not_applicable":
                result.reason = run.reason
                result.elapsed_s = time.perf_counter() - started
                return result
        broke = result.violated(pattern)
        for run in runs:  # what a replay of one trial is measured against
            run.trial = {"trial": run.seed - seed + 1, "of": count, "pattern": pattern,
                         "broke": broke}
    result.elapsed_s = time.perf_counter() - started
    return result
