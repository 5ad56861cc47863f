"""The scenario model: actors, intents, scripted providers, timed steps and the checkers to run.

A scenario is data. :mod:`harness.scenarios.loader` builds it from YAML (validated against
``scenario.schema.json``); :mod:`harness.scenarios.runner` plays it against a target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

ProviderOutcome = Literal["result", "error", "hang"]

# What each step kind needs from a target (DESIGN.md "Targets": capabilities).
CAPABILITIES = ("jobs", "attempts", "timeouts", "hedge", "owners", "replicas")
# Capabilities only a target profile can declare: a side-effect counter, a handler fault.
OBSERVER_CAPABILITIES = ("side_effects", "handler_faults")
# How the copies of a concurrent group arrive (harness.scenarios.arrivals).
ARRIVAL_PATTERNS = ("burst", "staggered", "straddle")
FAULT_KINDS = ("handler_error",)
SEQUENTIAL = "sequential"  # the pattern label of a scenario without concurrent groups


@dataclass(frozen=True, slots=True)
class IntentSpec:
    """One intent a scenario sends: the parsed body, the exact text sent, and its fingerprint."""

    name: str
    body: dict[str, Any]
    text: str
    fingerprint: str
    max_open_attempts: int


@dataclass(frozen=True, slots=True)
class ProviderScript:
    """A fake provider's scripted behaviour: after ``latency`` virtual seconds, a result,
    an error, or nothing at all (``hang``)."""

    name: str
    latency: float
    outcome: ProviderOutcome
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Create:
    """POST a job: ``concurrent`` identical requests at once when > 1. With ``others`` (a
    mixed group: ``intents: [a, b]``), copy *i* sends ``(intent, *others)[i % n]``: the same key
    with other bodies in flight together."""

    key: str
    intent: IntentSpec
    others: tuple[IntentSpec, ...] = ()

    @property
    def intents(self) -> tuple[IntentSpec, ...]:
        return (self.intent, *self.others)

    def intent_of_copy(self, copy: int) -> IntentSpec:
        """The intent copy ``copy`` (0-based) of a concurrent group sends."""
        intents = self.intents
        return intents[copy % len(intents)]


@dataclass(frozen=True, slots=True)
class Read:
    """GET a job."""

    job: str


@dataclass(frozen=True, slots=True)
class RunAttempt:
    """A worker: start an attempt, dispatch it, then the provider's scripted reply, or the
    worker's timeout (``timed_out``) if that comes first; a late reply is still delivered."""

    job: str
    provider: ProviderScript
    name: str
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel an attempt out-of-band."""

    attempt: str
    reason: str = "operator"


@dataclass(frozen=True, slots=True)
class Crash:
    """A fault: the attempt's worker dies; its pending timeout and reply never happen."""

    attempt: str


@dataclass(frozen=True, slots=True)
class ListAttempts:
    """GET a job's attempts."""

    job: str


@dataclass(frozen=True, slots=True)
class ListRaces:
    """GET a job's lost claims."""

    job: str


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault in the target itself, armed the way its profile says: ``handler_error`` makes
    the next request's handler fail."""

    kind: str = "handler_error"


Action = Create | Read | RunAttempt | Cancel | Crash | ListAttempts | ListRaces | Fault


@dataclass(frozen=True, slots=True)
class Step:
    """One timed step of a scenario."""

    index: int
    line: int | None
    at: float
    actor: str
    action: Action
    concurrent: int = 1
    save: str | None = None
    expect: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        return ACTION_NAMES[type(self.action)]

    def names_used(self) -> tuple[str, ...]:
        """The job and attempt names this step refers to (defined by earlier steps)."""
        action = self.action
        if isinstance(action, Read | ListAttempts | ListRaces | RunAttempt):
            return (action.job,)
        if isinstance(action, Cancel | Crash):
            return (action.attempt,)
        return ()

    def names_defined(self) -> tuple[str, ...]:
        if isinstance(self.action, RunAttempt):
            return (self.action.name,)
        return (self.save,) if self.save else ()


ACTION_NAMES: dict[type, str] = {
    Create: "create",
    Read: "read",
    RunAttempt: "attempt",
    Cancel: "cancel",
    Crash: "crash",
    ListAttempts: "attempts",
    ListRaces: "races",
    Fault: "fault",
}


@dataclass(frozen=True, slots=True)
class ArrivalSpec:
    """How the copies of each concurrent group arrive, and how often to repeat the scenario.

    ``burst``: released together by a barrier. ``staggered``: spread over ``window_ms`` (default:
    three times the first request's measured latency). ``straddle``: timed to land while the first
    request is being completed (across the last third of its measured latency). Each pattern is
    run ``trials`` times; the offsets come from the seed.
    """

    patterns: tuple[str, ...] = ("burst",)
    trials: int = 1
    window_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A whole scenario file."""

    name: str
    description: str
    source: str
    actors: tuple[str, ...]
    intents: dict[str, IntentSpec]
    providers: dict[str, ProviderScript]
    steps: tuple[Step, ...]
    checkers: tuple[str, ...]
    requires: frozenset[str] = field(default_factory=frozenset)
    seed: int = 0
    schedule: tuple[str, ...] | None = None
    arrival: ArrivalSpec | None = None
    #: checkers judged only when the run exercises them (``checkers_if_exercised:``): no
    #: evidence is required of them (e.g. a mismatch that exists only under a bytes fingerprint)
    optional_checkers: frozenset[str] = field(default_factory=frozenset)
    #: what the loader noticed that breaks the oracle rule on someone else's service (an absolute
    #: version), as ``file:line: message`` lines
    warnings: tuple[str, ...] = ()

    @property
    def has_groups(self) -> bool:
        """True when some step sends concurrent duplicates (arrival patterns apply)."""
        return any(s.concurrent > 1 and isinstance(s.action, Create) for s in self.steps)

    @property
    def duration(self) -> float:
        """The virtual time the script spans: the last step, provider reply or timeout."""
        end = 0.0
        for step in self.steps:
            end = max(end, step.at)
            action = step.action
            if isinstance(action, RunAttempt):
                if action.provider.outcome != "hang":
                    end = max(end, step.at + action.provider.latency)
                if action.timeout is not None:
                    end = max(end, step.at + action.timeout)
        return end


def trial_patterns(scenario: Scenario, patterns: Sequence[str] | None = None) -> tuple[str, ...]:
    """The patterns to run: the ones asked for, else the scenario's, else ``burst``; a scenario
    without concurrent groups has the single pattern ``sequential``."""
    if not scenario.has_groups:
        return (SEQUENTIAL,)
    if patterns:
        return tuple(patterns)
    return scenario.arrival.patterns if scenario.arrival else ("burst",)


def trial_count(scenario: Scenario, trials: int | None = None) -> int:
    if trials is not None:
        return trials
    return scenario.arrival.trials if scenario.arrival else 1
