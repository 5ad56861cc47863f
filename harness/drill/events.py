"""The drill's results@2 event: one :class:`DrillRun` per drill of a run — per promise, how many
intents held it, broke it or left it unknown (a rate), and for each intent that failed or was
unknown its findings, its lane diagram and the command that drills it again.

Plain frozen dataclasses (the reports render them); of the others' events, only the shared
pieces of :mod:`harness.scenarios.events`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.domain.verdicts import FINDING_WORD, JUDGED_WORD, Outcome, Promise, Verdict
from harness.scenarios.events import Timeline, Unknown


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
    PUBLISHED: ClassVar[dict[str, dict[Promise, str]]] = {"verdict": FINDING_WORD}
    promise: str
    verdict: Promise
    message: str = ""
    fix: str = ""


@dataclass(frozen=True)
class DrilledIntent:
    """One intent that failed or was unknown: what it showed, its lanes, and how to redo it."""

    PUBLISHED: ClassVar[dict[str, dict[Verdict, str]]] = {"verdict": JUDGED_WORD}
    tag: str
    trial: int
    verdict: Verdict
    findings: tuple[DrillFinding, ...] = ()
    winner: str | None = None
    answered_by: str | None = None  # "fb (the gateway's answer header)"
    calls: tuple[str, ...] = ()  # "gpt#3 hang → abandoned at 0.41 s"
    retries: int = 0  # provider calls after the first
    retries_with_key: int = 0  # of them, those that carried an idempotency key
    timeline: Timeline | None = None
    note: str = ""


@dataclass(frozen=True)
class DrillRun:
    """One drill of ``drill --target`` (or of ``check --target``'s drills) on one service."""

    TYPE: ClassVar[str] = "drill_run"
    PUBLISHED: ClassVar[dict[str, dict[Verdict, str]]] = {"verdict": JUDGED_WORD}
    drill: str
    target: str
    verdict: Verdict
    outcome: Outcome
    description: str = ""
    profile: str = ""
    trials: int = 0
    promises: tuple[PromiseRate, ...] = ()
    intents: tuple[DrilledIntent, ...] = ()  # failing and unknown ones (the first few)
    unknowns: tuple[Unknown, ...] = ()
    command: str = ""
    provider_calls: int = 0
    billed_calls: int = 0
    retries: int = 0  # provider calls after each intent's first, over the drill
    retries_with_key: int = 0  # of them, those that carried an idempotency key
    wall_s: float = 0.0
