"""Shrink a failing schedule to the fewest steps that still break the same promise.

Two passes, each keeping a candidate only if the same checker still finds a violation:

1. **The plan** (delta debugging): drop chunks of operations, then single ones, from setup,
   clients, timers and epilogue. Each candidate runs with :class:`GuidedChoices`, which follows
   the failing run's order wherever the remaining operations allow it.
2. **The interleaving** (Hypothesis): the reduced plan runs under ``@given(st.data())``, each
   decision a ``data.draw`` over the enabled steps; Hypothesis's shrinker then reduces the
   decisions to the shortlex-smallest failing sequence (fewest decisions, earliest options).
   Derandomised and without a database, so the same failure always shrinks to the same bytes.
   If Hypothesis finds no failing interleaving of the reduced plan, the first pass stands; without
   Hypothesis installed (the base install) this pass is skipped, and said so.
3. **Fewer preemptions**: wherever a client was switched away from while it could have gone on,
   try letting it go on (the rest following the failing order); keep the run if the same
   promise still breaks. The repro then reads as few context switches as the race needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.explore.choices import GuidedChoices, HypothesisChoices, client_of
from harness.explore.controller import ExploreStuck, Runner, ScheduleRun
from harness.explore.plan import Plan

HYPOTHESIS_EXAMPLES = 150


@dataclass
class Shrunk:
    """The smallest failing run found, and what it took."""

    outcome: ScheduleRun
    original_steps: int
    original_ops: int
    plan_runs: int
    hypothesis_runs: int
    elapsed_s: float
    note: str = ""
    original_preemptions: int = 0
    preemption_runs: int = 0


class _Reproduced(Exception):
    def __init__(self, outcome: ScheduleRun) -> None:
        super().__init__(", ".join(outcome.broken))
        self.outcome = outcome


def _events(outcome: ScheduleRun) -> list[str]:
    return [str(entry["event"]) for entry in outcome.schedule]


def _smaller(a: ScheduleRun, b: ScheduleRun) -> bool:
    """``a`` is a better repro than ``b``: fewer steps, then fewer ops, then fewer preemptions,
    then fewer events."""
    return ((a.steps, a.plan.size(), preemptions(a.schedule), len(a.schedule))
            < (b.steps, b.plan.size(), preemptions(b.schedule), len(b.schedule)))


def shrink(
    controller: Runner,
    failing: ScheduleRun,
    *,
    hypothesis_examples: int = HYPOTHESIS_EXAMPLES,
    progress: Callable[[str], None] | None = None,
) -> Shrunk:
    """The smallest run of ``failing``'s plan that breaks the same (first) promise."""
    started = time.perf_counter()
    keep = failing.broken[0]
    runs = {"plan": 0, "hypothesis": 0}

    def attempt(plan: Plan, guide: ScheduleRun) -> ScheduleRun | None:
        runs["plan"] += 1
        try:
            outcome = controller.run(plan, GuidedChoices(_events(guide)))
        except ExploreStuck:
            return None
        return outcome if keep in outcome.broken else None

    best = failing
    units = failing.plan.units()
    chunks = 2
    while len(units) >= 2:  # ddmin over the complements
        size = -(-len(units) // chunks)
        for start in range(0, len(units), size):
            candidate = units[:start] + units[start + size:]
            found = attempt(failing.plan.keeping(set(candidate)), best)
            if found is not None:
                units, best = candidate, found
                chunks = max(chunks - 1, 2)
                break
        else:
            if chunks >= len(units):
                break
            chunks = min(len(units), chunks * 2)
    if len(units) == 1:
        only = attempt(failing.plan.keeping(set()), best)
        if only is not None:
            best = only
    if progress:
        progress(f"plan: {failing.plan.size()} → {best.plan.size()} ops, "
                 f"{failing.steps} → {best.steps} steps ({runs['plan']} runs)")
    note = ""
    if hypothesis_examples > 0 and not _hypothesis_installed():
        hypothesis_examples = 0  # the base install: the other two passes still shrink
        note = ("interleaving pass skipped: it needs Hypothesis "
                "(pip install 'failover-harness[explore]')")
        if progress:
            progress(f"interleaving: {note}")
    if hypothesis_examples > 0:
        found_by_hypothesis, runs["hypothesis"], note = _interleaving(
            controller, best.plan, keep, hypothesis_examples)
        if found_by_hypothesis is not None and _smaller(found_by_hypothesis, best):
            best = found_by_hypothesis
        if progress:
            progress(f"interleaving: {best.steps} steps, {len(best.schedule)} events "
                     f"({runs['hypothesis']} Hypothesis runs{'; ' + note if note else ''})")
    best, runs["preemptions"] = _fewer_preemptions(controller, best, keep)
    if progress:
        progress(f"preemptions: {preemptions(failing.schedule)} → "
                 f"{preemptions(best.schedule)} ({runs['preemptions']} runs)")
    return Shrunk(best, failing.steps, failing.plan.size(), runs["plan"], runs["hypothesis"],
                  time.perf_counter() - started, note, preemptions(failing.schedule),
                  runs["preemptions"])


def _hypothesis_installed() -> bool:
    """Whether the ``[explore]`` extra's Hypothesis can be imported."""
    try:
        import hypothesis  # noqa: F401  # optional extra: explore
    except ImportError:
        return False
    return True


def preemptions(schedule: Sequence[dict[str, object]]) -> int:
    """How often the run switched away from a client that could have gone on."""
    count, previous = 0, None
    for entry in schedule:
        event = str(entry["event"])
        enabled = entry.get("enabled")
        if previous is not None and isinstance(enabled, list) and client_of(event) != previous \
                and any(client_of(str(e)) == previous for e in enabled):
            count += 1
        previous = client_of(event)
    return count


class _Sticky(GuidedChoices):
    """The failing run's order up to decision ``at``; from there on, whoever ran last goes on
    as long as it can (the others follow the failing order)."""

    def __init__(self, events: Sequence[str], at: int) -> None:
        super().__init__(events)
        self.at = at
        self.decision = 0
        self.previous: str | None = None

    def choose(self, enabled: Sequence[str]) -> int:
        self.decision += 1
        if self.decision - 1 >= self.at and self.previous is not None:
            for i, label in enumerate(enabled):
                if client_of(label) == self.previous:
                    return i
        return super().choose(enabled)

    def observe(self, label: str) -> None:
        super().observe(label)
        self.previous = client_of(label)


def _fewer_preemptions(controller: Runner, best: ScheduleRun, keep: str) -> tuple[ScheduleRun, int]:
    runs = 0
    improved = True
    while improved and runs < 40:
        improved = False
        decisions = [e for e in best.schedule if "enabled" in e]
        for at in range(len(decisions)):
            runs += 1
            try:
                outcome = controller.run(best.plan, _Sticky(_events(best), at))
            except ExploreStuck:
                continue
            if keep in outcome.broken and preemptions(outcome.schedule) < preemptions(
                    best.schedule) and outcome.steps <= best.steps:
                best, improved = outcome, True
                break
    return best, runs


def _interleaving(controller: Runner, plan: Plan, keep: str,
                  examples: int) -> tuple[ScheduleRun | None, int, str]:
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings  # optional extra: explore
    from hypothesis import strategies as st  # optional extra: explore

    runs = 0

    @settings(database=None, derandomize=True, max_examples=examples, deadline=None,
              phases=[Phase.generate, Phase.shrink], verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              print_blob=False)
    @given(st.data())
    def interleaving(data: st.DataObject) -> None:
        nonlocal runs
        runs += 1
        try:
            outcome = controller.run(plan, HypothesisChoices(data))
        except ExploreStuck:
            return
        if keep in outcome.broken:
            raise _Reproduced(outcome)

    try:
        interleaving()
    except _Reproduced as reproduced:
        return reproduced.outcome, runs, ""
    except Exception as exc:  # Flaky, or anything Hypothesis raises instead: keep pass one
        from hypothesis.errors import Flaky  # optional extra: explore

        why = ("the same decisions did not always break the promise (the service's timing "
               "varies between runs)" if isinstance(exc, Flaky)
               else f"Hypothesis raised {type(exc).__name__}")
        return None, runs, f"interleaving pass ended early, {why}: the plan pass's result stands"
    return None, runs, f"no failing interleaving in {examples} Hypothesis examples"
