"""Replay a repro: run its plan again following its decisions, and say whether the run is the
same — every event, every history byte, the verdict — or exactly where it diverged.

A divergence is never accepted silently: a recorded decision that is no longer enabled, a
decision left over, an event or an outcome that changed, a verdict that changed. After a
divergence the plan runs once more, following the recording wherever it still can, so the
report can say whether the promise holds now (the bug may be fixed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.domain.verdicts import STATUS_WORD
from harness.domain.words import counted
from harness.explore.choices import GuidedChoices, RecordedChoices
from harness.explore.controller import Runner, ScheduleRun
from harness.explore.repro import Repro
from harness.scenarios.replay import first_difference
from harness.scenarios.scheduler import Divergence


@dataclass
class Replayed:
    """The new run, and the first difference from the recording (None: identical)."""

    outcome: ScheduleRun
    divergence: str | None
    compared: bool  # a recorded history was there to compare with

    @property
    def identical(self) -> bool:
        return self.divergence is None


def _entry_line(entry: dict[str, object]) -> str:
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def unsettled(*schedules: list[dict[str, object]] | None) -> str:
    """Where a run chose while a request was still moving (a settle expired), if it did: the
    schedule is not controlled from there on, so a divergence there is nondeterminism."""
    marks = sorted((int(str(e.get("n", 0))), e.get("settle")) for schedule in schedules
                   for e in schedule or () if e.get("settle"))
    if not marks:
        return ""
    n, clients = marks[0]
    moving = ", ".join(str(c) for c in clients) if isinstance(clients, list) else str(clients)
    return (f" — nondeterministic here: at event #{n} the settle expired ({moving} still "
            "moving), so the order from there on was not controlled; raise --settle-ms")


def replay_repro(controller: Runner, repro: Repro) -> Replayed:
    """Run ``repro`` on ``controller``'s store, following its decisions."""
    choices = RecordedChoices(repro.decisions)
    try:
        with controller.following(repro.schedule):
            outcome = controller.run(repro.plan, choices)
    except Divergence as exc:
        guide = [str(e["event"]) for e in repro.schedule] if repro.schedule else repro.decisions
        with controller.following(repro.schedule):
            closest = controller.run(repro.plan, GuidedChoices(guide))
        return Replayed(closest, f"the schedule diverged: {exc.message}"
                        + unsettled(repro.schedule, closest.schedule), False)
    if choices.position < len(choices.decisions):
        left = len(choices.decisions) - choices.position
        return Replayed(outcome, f"the run ended with {counted(left, 'recorded decision')} unused, "
                        f"from {choices.decisions[choices.position]!r}", False)
    difference = None
    if repro.schedule is not None:
        difference = first_difference([_entry_line(e) for e in repro.schedule],
                                      [_entry_line(e) for e in outcome.schedule])
        if difference:
            difference = "schedule " + difference.replace("op #", "event #")
    if difference is None and repro.history_lines is not None:
        difference = first_difference(repro.history_lines, outcome.history_lines())
        if difference:
            difference = "history " + difference
    if difference is None and repro.status is not None and outcome.status != repro.status:
        difference = (f"the verdict changed: recorded {STATUS_WORD[repro.status]}, "
                      f"now {STATUS_WORD[outcome.status]}")
    if difference is not None:
        difference += unsettled(repro.schedule, outcome.schedule)
    return Replayed(outcome, difference, repro.history_lines is not None)
