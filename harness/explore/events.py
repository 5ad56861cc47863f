"""Explore's event (results@2): the schedules tried, the (shrunk) failing schedule, the repro
folder and the command that replays it. Pure data: :mod:`harness.explore.emit` makes it from a
search; :mod:`harness.reports` renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from harness.domain.verdicts import JUDGED_WORD, Outcome, Verdict
from harness.scenarios.events import Check, Timeline


@dataclass(frozen=True)
class ScheduleStep:
    """One step of an explored interleaving: a statement a client ran, or a timer."""

    n: int
    client: str
    operation: str = ""
    statement: str = ""
    kind: Literal["statement", "timer"] = "statement"
    waited: bool = False


@dataclass(frozen=True)
class ExploreResult:
    """What ``explore`` found: schedules tried, the (shrunk) failing schedule, the repro folder
    and the command that replays it."""

    TYPE: ClassVar[str] = "explore_result"
    PUBLISHED: ClassVar[dict[str, dict[Verdict, str]]] = {"verdict": JUDGED_WORD}
    target: str
    workload: str
    verdict: Verdict
    outcome: Outcome
    mode: Literal["search", "stress", "replay"] = "search"
    seed: int = 0
    choices: str = "seeded"
    schedules_tried: int = 0
    steps_tried: int = 0
    exhausted: bool = False
    stress: bool = False
    found_at: int | None = None  # the schedule number of the failure
    checks: tuple[Check, ...] = ()
    schedule: tuple[ScheduleStep, ...] = ()
    original_steps: int | None = None
    shrunk_steps: int | None = None
    timers: int = 0
    ops: int = 0
    story: tuple[str, ...] = ()  # who won, what was lost
    repro_dir: str | None = None
    replay_command: str | None = None
    replayed_identical: bool | None = None
    replay_divergence: str | None = None  # where the one replay left the recording
    timeline: Timeline | None = None
    note: str = ""
    wall_s: float = 0.0
