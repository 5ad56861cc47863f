"""What one drilled intent left behind, at both ends: every provider call of its tag (from the
fakes' logs) and every answer of the service (submissions and observations), on one clock.

Plain data, no I/O; the engine fills it in, :mod:`harness.drill.judge` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.providers.received import BILLED

#: request headers that carry an idempotency key (a retry with one can be deduplicated)
IDEMPOTENCY_HEADERS = ("idempotency-key", "x-idempotency-key")
#: answer headers in which a gateway names the deployment that answered (LiteLLM)
ANSWERED_BY_HEADERS = ("x-litellm-model-api-base",)

#: how a call ended when its outcome became known to the service (resolved): answered, refused
#: with an HTTP error, reset or cut by the provider, or closed by the drill (a reset the service
#: sees). ``late`` and ``abandoned`` calls were given up by the service: their outcome stays
#: unknown to it (the provider may still be generating, and billing) for the rest of the intent,
#: as an indeterminate operation never completes in Jepsen's histories.
RESOLVING = frozenset({"answered", "refused", "reset", "cut", "released"})

#: the drill's status classes for what the service says about a job
StatusClass = str  # succeeded | failed | running | unknown | unrecognised | error


@dataclass(frozen=True, slots=True)
class Call:
    """One provider call of the intent, as its fake saw it."""

    provider: str
    role: str  # primary | fallback
    seq: int
    at: float
    ended_at: float | None  # None: still open when the drill stopped
    outcome: str  # answered | late | abandoned | reset | cut | refused | released | in_flight
    behaviour: str
    status: int | None = None
    stream: bool = False
    keyed: bool = False  # the request carried an idempotency key header
    held: bool = False  # its answer was held (docs/drill.md, "Held answers")
    #: how its held answer's wait ended: the drill let it go, the fakes' backstop passed, or the
    #: service left first (None: not held); and when
    freed: str | None = None
    freed_at: float | None = None
    #: it arrived after an answer of the intent and its answer waited for a look at the job
    #: (docs/drill.md, "Held answers"): how that wait ended (None: it did not wait)
    waited: str | None = None
    prompt: str = ""  # what it asked, as a key: a retry or a re-run asks the same

    @property
    def billed(self) -> bool:
        return self.outcome in BILLED

    @property
    def resolved_at(self) -> float | None:
        """When the service learnt the call's outcome (None: never, it stays unresolved)."""
        return self.ended_at if self.outcome in RESOLVING else None

    def unresolved_at(self, t: float, tolerance: float = 0.0) -> bool:
        """Whether the call had started and was unresolved at ``t`` (``tolerance``: an end
        recorded just after ``t`` counts as before it, the two clocks being one process's)."""
        resolved = self.resolved_at
        return self.at < t and (resolved is None or resolved > t + tolerance)

    @property
    def ident(self) -> str:
        return f"{self.provider}#{self.seq}"


@dataclass(frozen=True, slots=True)
class Submission:
    """One submit of the intent (a double click submits twice)."""

    at: float
    status: int | None  # the service's HTTP status (None: no answer)
    job_id: str | None = None
    error: str = ""
    ended_at: float | None = None
    result: str | None = None  # chat: the answer's text
    stream_complete: bool | None = None  # chat with stream: did the stream end properly?
    answered_base: str | None = None  # the gateway's word on who answered (an api base URL)
    unreached: bool = False  # no answer because no connection was made (refused, timed out)


@dataclass(frozen=True, slots=True)
class Observation:
    """One look at the job: what the service said, classified."""

    at: float  # when the drill asked
    status: StatusClass
    raw_status: str | None
    result: str | None
    http_status: int | None = None
    answered_at: float | None = None  # when the answer came (a loaded service is slow)
    error: str = ""  # status "error": why the answer could not be read (a redirect, not JSON)


@dataclass
class IntentEvidence:
    """Everything one intent left behind."""

    drill: str
    trial: int
    tag: str
    started_at: float
    submissions: list[Submission] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    attempts: int | None = None  # entries the service lists for the job (None: not shown)
    races: int | None = None
    ended_at: float = 0.0
    stopped_waiting: bool = False  # calls were still open when the drill stopped waiting
    #: when the drill's budget for the job ran out with the job not complete (None: it did not):
    #: the drill then released the intent's calls, so a call asked after it is the release's
    #: doing, not the service's own failover
    budget_ended_at: float | None = None
    note: str = ""
    #: why the intent could not be drilled, from the service's answers (an id that cannot be
    #: put into a URL, a submit answer that is not JSON): (the cause, its fix); judged unknown
    cause: tuple[str, str] | None = None
    untagged: int = 0  # provider calls without any drill tag while this intent ran
