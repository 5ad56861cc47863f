"""The drill's results@2 event: one :class:`DrillRun` per drill of a run — per promise, how many
intents held it, broke it or left it unknown (a rate), and for each intent that failed or was
unknown its findings, its lanes (each provider call from start to end and how it ended, the
job's observed states, the winner) and the command that drills it again.

Plain frozen dataclasses with no import from the package: the reports render them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

DrillVerdict = Literal["passed", "failed", "unknown"]
DrillOutcome = Literal["pass", "fail", "unknown", "skip"]
FindingVerdict = Literal["held", "broken", "unknown", "not_judged"]


@dataclass(frozen=True)
class PromiseRate:
    """One promise over the drill's intents: e.g. "broken in 3 of 20 intents"."""

    promise: str  # the judge's vocabulary: one_job, timeout_not_failure, …
    title: str
    held: int = 0
    broken: int = 0
    unknown: int = 0
    not_judged: int = 0
    text: str = ""
    example: str = ""  # the first broken (else unknown) intent's evidence


@dataclass(frozen=True)
class DrillFinding:
    """One promise's verdict on one intent, with the evidence or the reason and the fix."""

    promise: str
    verdict: FindingVerdict
    message: str = ""
    fix: str = ""


@dataclass(frozen=True)
class DrillMark:
    """A moment on a lane: ``kind`` is submitted, a status class (running, succeeded, …),
    started, or how a call ended (answered, abandoned, late, reset, cut, refused, released)."""

    t: float  # seconds since the intent was submitted
    kind: str
    label: str = ""


@dataclass(frozen=True)
class DrillLane:
    """The job (or the client of a chat call), or one provider call."""

    label: str
    role: str = ""  # primary | fallback for a call
    marks: tuple[DrillMark, ...] = ()
    outcome: str | None = None  # a call: won, or how it ended; the job: its last status


@dataclass(frozen=True)
class DrilledIntent:
    """One intent that failed or was unknown: what it showed, its lanes, and how to redo it."""

    tag: str
    trial: int
    verdict: DrillVerdict
    findings: tuple[DrillFinding, ...] = ()
    winner: str | None = None
    calls: tuple[str, ...] = ()  # "gpt#3 (primary, scripted hang) started at 0.010 s, …"
    lanes: tuple[DrillLane, ...] = ()
    duration_s: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class DrillUnknown:
    reason: str
    fix: str = ""


@dataclass(frozen=True)
class DrillRun:
    """One drill of ``drill --target`` (or of ``check --target``'s drills) on one service."""

    TYPE: ClassVar[str] = "drill_run"
    drill: str
    target: str
    verdict: DrillVerdict
    outcome: DrillOutcome
    description: str = ""
    profile: str = ""
    trials: int = 0
    promises: tuple[PromiseRate, ...] = ()
    intents: tuple[DrilledIntent, ...] = ()  # failing and unknown ones (the first few)
    unknowns: tuple[DrillUnknown, ...] = ()
    command: str = ""
    provider_calls: int = 0
    billed_calls: int = 0
    wall_s: float = 0.0
