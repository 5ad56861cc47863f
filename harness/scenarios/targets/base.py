"""What the engine drives: a target (opened once) and its sessions (one per scenario run).

Every operation answers like the HTTP API does (API.md): a status and a JSON body (the job, the
attempt, a list, or problem details with a ``code``). Status 0 means no answer at all: the
operation is indeterminate. A target never judges; it only answers.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, Self

from harness.domain.clock import ManualClock
from harness.domain.redaction import redact_url as redact  # noqa: F401  (its importers)
from harness.scenarios.model import IntentSpec, Scenario


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: HTTP-style ``status`` (0: none came) and the JSON ``body``."""

    status: int
    body: Any
    detail: str = ""
    never_sent: bool = False  # status 0 only: the request provably never left
    #: create only: the target said this answer is a replay (its replay header), or None when
    #: the target does not say
    replayed: bool | None = None
    #: "busy" answers the session retried before this one (profile targets): answers per kind
    #: (``in_flight`` as the profile declares it, ``locked`` for 423/429), and the milliseconds
    #: from the first send to the last busy answer
    busy: tuple[tuple[str, int], ...] = ()
    busy_ms: float = 0.0
    #: the start of a 5xx body, kept as evidence (profile targets)
    excerpt: str = ""
    #: a transport artefact the client repaired: the request was written to a kept-alive
    #: connection the service had already closed, and was sent again on a new one (why, e.g.
    #: ``ReadError on a reused connection``); the answer is the service's answer to that resend
    resent: str = ""

    @property
    def indeterminate(self) -> bool:
        """No answer, and the request may have been applied: an ``info`` op."""
        return self.status == 0 and not self.never_sent

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def code(self) -> str:
        """The problem ``code`` of an error reply (``http_<status>`` if the body has none)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("code"), str):
            return str(self.body["code"])
        if self.status == 0:
            return "not_sent" if self.never_sent else "no_answer"
        return f"http_{self.status}"


class TargetSession(Protocol):
    """The operations of API.md, for one scenario run; thread-safe (groups run concurrently)."""

    def create_job(self, owner: str, key: str, body_text: str) -> Reply: ...

    def get_job(self, owner: str, job_id: str) -> Reply: ...

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply: ...

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply: ...

    def list_attempts(self, owner: str, job_id: str) -> Reply: ...

    def list_races(self, owner: str, job_id: str) -> Reply: ...


class Target(ABC):
    """A store or service under test."""

    #: sqlite | postgres | mutant | http
    kind: str
    #: what it can do (model.CAPABILITIES)
    capabilities: frozenset[str]
    #: True when the target runs on the engine's clock (in-process stores): histories are then
    #: byte-identical for the same seed
    virtual_clock: bool = True
    #: how the target tells intents apart: ``canonical`` (API.md: RFC 8785 JSON of the intent with
    #: its defaults filled in), ``json`` (RFC 8785 JSON of the body as sent: key order and ``1``
    #: vs ``1.0`` do not matter, an added default does) or ``bytes`` (the exact request body)
    fingerprint_mode: str = "canonical"
    #: how the target digests a lost claim's payload in its races list: ``sha256-rfc8785`` (the
    #: reference's: compared with the result's digest) or ``none`` (unknown: races are matched by
    #: attempt id only)
    race_digest: str = "none"
    #: read the side-effect counter only in scenarios that judge it (an in-process store, whose
    #: counter is its job rows); a profile's counter is read in every run
    counts_side_effects_when_judged: bool = False

    @property
    @abstractmethod
    def description(self) -> str:
        """The target as the user wrote it, with any password removed."""

    def promises(self) -> dict[str, Any]:
        """What the target promises beyond API.md (a profile's error policy and lease), written
        into the history where checkers need it; nothing for API.md targets."""
        return {}

    def preflight(self) -> None:  # noqa: B027 - in-process targets have nothing to check
        """Before any scenario: raise :class:`ConfigError` when the target cannot be used as
        configured (a service out of reach, or refusing an owner's token)."""

    def unready(self, scenario: Scenario) -> tuple[str, str] | None:
        """Why ``scenario`` cannot be judged here although the target could run it (the user's
        configuration lacks something: a token for one of its owners), and the fix; or None.
        Such a run is unknown, never passed."""
        return None

    def unmapped(self, op: str) -> frozenset[str]:
        """The fields of an ``op`` answer (``create``, ``read``, ``start``, an event…) the target
        does not map, so promises nothing about (a profile without versions); none for API.md
        targets."""
        return frozenset()

    def as_sent(self, intent: IntentSpec) -> IntentSpec:
        """``intent`` as the target is sent it: its text is the request body (a profile's body
        template makes it the service's own body); itself for API.md targets."""
        return intent

    def terms(self) -> dict[str, str]:
        """How the target's answers are named in promises and messages (its own statuses, when
        a profile declares them); API.md's by default."""
        return {}

    def not_applicable(self, scenario: Scenario) -> str | None:
        """Why ``scenario`` cannot run here (a missing capability), or None."""
        missing = sorted(scenario.requires - self.capabilities)
        if missing:
            return f"needs {', '.join(missing)}, which {self.kind} targets lack"
        return None

    @abstractmethod
    def session(
        self, clock: ManualClock, run_id: str, concurrency: int
    ) -> AbstractContextManager[TargetSession]:
        """A session for one run, on ``clock``; ``concurrency`` = the largest group size."""

    def close(self) -> None:  # noqa: B027 - most targets hold nothing
        """Release what the target holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SequentialIds:
    """Deterministic ids for one run: ``job_<run>_1``, ``att_<run>_1``… (thread-safe)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, prefix: str) -> str:
        with self.lock:
            n = self.counts.get(prefix, 0) + 1
            self.counts[prefix] = n
        return f"{prefix}_{self.run_id}_{n}"


