"""The side-effect checker: one click is one side effect, read from the target's own counter.

The runner reads the counter the target profile names (``side_effects`` ops, at the start and the
end of the run). A click is one (owner, key); every click that was answered a job must have made
exactly one side effect, and a refused click none. Job ids cannot show a handler that ran twice
when every answer still names the first job; the counter can.
"""

from __future__ import annotations

from collections import defaultdict

from harness.domain.words import counted
from harness.scenarios.checkers.base import EvidenceNeed, Findings, checker, of, ok
from harness.scenarios.history import Pair

CALIBRATION = "~calibrate"  # the keys of the requests that measured a first request's latency
NOT_OBSERVED = ("the target's side effects were not observed: name a counter under "
                "side_effects: in its profile (an HTTP endpoint or a SQL query)")
#: the fix, concrete: what to write and where (a user without a profile needs one for this alone)
COUNTER_FIX = ("name a side-effect counter in the target profile (--target-profile FILE), e.g. "
               "side_effects: {http: {path: /stats, field: jobs}} or side_effects: {sql: "
               "{url_env: JOBS_DB, query: \"SELECT count(*) FROM jobs\"}}; or, for an LLM job "
               "service, describe its providers under drill: and run check --target, which "
               "counts billed provider calls (docs/detection.md, 'Side effects, observed "
               "directly')")


def side_effects_made(items: list[Pair]) -> tuple[int, list[Pair]] | None:
    """How far the counter rose during the run, and the readings; None when not observed."""
    readings = of(items, "side_effects")
    if len(readings) < 2 or not all(ok(p) for p in readings):
        return None
    return int(readings[-1].value["count"]) - int(readings[0].value["count"]), readings


def clicks(items: list[Pair]) -> dict[tuple[str, str], list[Pair]]:
    """Every create by (owner, key), in history order."""
    by_click: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in of(items, "create"):
        by_click[(pair.invoke.value["owner"], pair.invoke.value["key"])].append(pair)
    return by_click


@checker("one click is one side effect: the target's own counter rises by exactly the number of "
         "clicks (owner, key) answered a job — never once more for a duplicate",
         EvidenceNeed("click answered a job", lambda items: sum(
             any(ok(p) for p in group) for group in clicks(items).values())))
def one_side_effect_per_click(items: list[Pair], found: Findings) -> None:
    observed = side_effects_made(items)
    failed = [p for p in of(items, "side_effects") if not ok(p)]
    if observed is None and failed:  # a counter there, but unreadable at that moment
        why = failed[0].value.get("error") if isinstance(failed[0].value, dict) else None
        found.unknown(f"the side-effect counter could not be read: {why or 'no reading'}",
                      "see the service's log; a longer drill.timeouts.job_s gives its worker "
                      "more time to finish the run's jobs")
        return
    if observed is None:
        found.unknown(NOT_OBSERVED, COUNTER_FIX)
        return
    made, readings = observed
    by_click = clicks(items)
    served = {c for c, group in by_click.items() if any(ok(p) for p in group)}
    unsure = {c for c, group in by_click.items()
              if c not in served and any(p.type == "info" for p in group)}
    before, after = readings[0].value["count"], readings[-1].value["count"]
    repeated = [p for c, group in by_click.items() if len(group) > 1 for p in group]
    names = ", ".join(f"{owner}'s {key!r}" for owner, key in sorted(served)
                      if CALIBRATION not in key) or "none"
    calibrations = sum(CALIBRATION in key for _, key in served)
    if calibrations:
        names += f" and {counted(calibrations, 'calibration request')}"
    if made > len(served) + len(unsure):
        extra = made - len(served)
        found.violation(
            f"{counted(len(served), 'click')} answered a job made {counted(made, 'side effect')} "
            f"(the counter went "
            f"{before} → {after}): {extra} more than one per click — a duplicate ran the "
            f"handler again (clicks: {names})", readings, repeated)
    elif made < len(served):
        found.violation(
            f"{counted(len(served), 'click')} {'was' if len(served) == 1 else 'were'} answered a "
            f"job but the counter rose by only {made} "
            f"({before} → {after}): a job was answered that was never made", readings)
    if unsure and made > len(served):
        found.unknown(f"{counted(len(unsure), 'click')} got no answer: "
                      f"{'it' if len(unsure) == 1 else 'they'} may have made a side effect")
