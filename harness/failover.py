"""The failover runner: drive one job through its contract's chain, one attempt per provider call.

For each link, in order: ``start_attempt`` → ``dispatch`` (posted *before* the request leaves,
so a crash never hides a sent request) → one call, no retries → then

- a reply whose ``parsed`` object meets the request's schema: ``succeed`` (the claim, rule 7);
- a ``failed`` error (not sent, or refused), a refusal, or an answer that is not a valid object:
  ``fail``, then the next link;
- an ``unknown`` error (timeout, reset, 504): ``time_out``, then STOP. The job waits until the
  attempt is resolved or cancelled out-of-band (rule 6); a later run resumes after it.

Links after the first are failover: ``failover: off`` is skipped, ``manual`` stops the run until
an operator approves it (``approved=``), and every such link must pass
``Eligibility.is_eligible(provider, contract)`` (rule 10); skipped links are recorded with the
reason. With a :class:`HedgePolicy` and a job whose policy allows two open attempts, the next
usable link is started once ``delay_s`` passes without an answer; the first winner takes the
job and the other attempt is cancelled.

The store is synchronous (SQL drivers); every store call runs in a worker thread
(:class:`AsyncStore`, ``asyncio.to_thread``), so a hedge timer or a sibling attempt never waits
behind database latency on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import jsonschema

from harness.domain import (
    Attempt,
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    EventResult,
    Job,
    JobCompleted,
    JobStatus,
)
from harness.providers.base import ProviderClient, ProviderReply, ProviderRequest
from harness.providers.classify import ProviderCallError
from harness.providers.config import ChainLink
from harness.providers.secrets import redact
from harness.store.base import Store

log = logging.getLogger("harness.failover")


T = TypeVar("T")


class AsyncStore:
    """The store calls the runner makes, each awaited in a worker thread (``asyncio.to_thread``).

    One place that turns the synchronous :class:`~harness.store.base.Store` into awaitables:
    the store itself is written once, and the event loop never runs SQL.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def get_job(self, owner: str, job_id: str) -> Job:
        return await self._call(self.store.get_job, owner, job_id)

    async def list_attempts(self, owner: str, job_id: str) -> list[Attempt]:
        return await self._call(self.store.list_attempts, owner, job_id)

    async def start_attempt(self, owner: str, job_id: str, provider: str) -> Attempt:
        return await self._call(self.store.start_attempt, owner, job_id, provider)

    async def dispatch(self, owner: str, attempt_id: str) -> Attempt:
        return await self._call(self.store.dispatch, owner, attempt_id)

    async def time_out(self, owner: str, attempt_id: str) -> Attempt:
        return await self._call(self.store.time_out, owner, attempt_id)

    async def fail(self, owner: str, attempt_id: str, error: dict[str, Any]) -> Attempt:
        return await self._call(self.store.fail, owner, attempt_id, error)

    async def succeed(self, owner: str, attempt_id: str, result: Any) -> EventResult:
        return await self._call(self.store.succeed, owner, attempt_id, result)

    async def cancel(self, owner: str, attempt_id: str, reason: str) -> Attempt:
        return await self._call(self.store.cancel, owner, attempt_id, reason)


class Eligibility(Protocol):
    """Whether failover may use a provider for a contract (the contracts layer certifies)."""

    def is_eligible(self, provider_id: str, contract_id: str) -> tuple[bool, str]: ...


class RunStatus(StrEnum):
    """How a run ended."""

    SUCCEEDED = "succeeded"                    # an attempt of this run won the claim
    ALREADY_COMPLETED = "already_completed"    # the job was completed (or cancelled) by others
    WAITING_ON_UNKNOWN = "waiting_on_unknown"  # an attempt is unknown: resolve or cancel it
    IN_FLIGHT = "in_flight"                    # another worker's attempt is open
    NEEDS_APPROVAL = "needs_approval"          # the next link is `failover: manual`
    EXHAUSTED = "exhausted"                    # every link failed or was skipped


@dataclass(frozen=True, slots=True)
class HedgePolicy:
    """Start a second attempt after ``delay_s`` without an answer (needs max_open_attempts=2)."""

    delay_s: float


@dataclass(frozen=True, slots=True)
class SkippedLink:
    """A link the run did not use, and why."""

    provider: str
    reason: str


@dataclass(slots=True)
class FailoverResult:
    """What a run did: its status, the job's result, its attempts and the links it skipped."""

    status: RunStatus
    job_id: str
    result: Any = None
    attempts: list[Attempt] = field(default_factory=list)
    skipped: list[SkippedLink] = field(default_factory=list)
    blocking_attempt_id: str | None = None
    next_provider: str | None = None  # the manual link waiting for approval

    def summary(self) -> str:
        """One line for logs and the CLI."""
        text = f"job {self.job_id}: {self.status}"
        if self.blocking_attempt_id:
            text += f" (attempt {self.blocking_attempt_id} blocks: resolve or cancel it)"
        if self.next_provider:
            text += f" (approve failover to {self.next_provider!r} to continue)"
        for skip in self.skipped:
            text += f"; skipped {skip.provider}: {skip.reason}"
        return redact(text)


@dataclass(slots=True)
class _Flight:
    """One attempt in flight: its store record and the provider call."""

    attempt: Attempt
    task: asyncio.Task[ProviderReply]


class _Stop(Exception):
    """Ends a run early with a status (internal)."""

    def __init__(self, status: RunStatus, *, blocking: str | None = None,
                 next_provider: str | None = None) -> None:
        super().__init__(status.value)
        self.status, self.blocking, self.next_provider = status, blocking, next_provider


class FailoverRunner:
    """Runs jobs of one owner through failover chains (see the module docstring).

    ``clients`` maps provider ids to clients (``harness.providers.clients_for``);
    ``hedge_timer(delay_s)`` is awaited before hedging (default ``asyncio.sleep``; tests pass an
    event so no test depends on wall-clock time).
    """

    def __init__(
        self,
        store: Store,
        owner_id: str,
        *,
        clients: Mapping[str, ProviderClient],
        eligibility: Eligibility,
        hedge: HedgePolicy | None = None,
        hedge_timer: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store, self.owner_id = store, owner_id
        self.db = AsyncStore(store)
        self.clients, self.eligibility = clients, eligibility
        self.hedge, self.hedge_timer = hedge, hedge_timer

    def run_sync(self, job_id: str, chain: Sequence[ChainLink], request: ProviderRequest,
                 **options: Any) -> FailoverResult:
        """Blocking :meth:`run` (not inside a running event loop)."""
        return asyncio.run(self.run(job_id, chain, request, **options))

    async def run(
        self,
        job_id: str,
        chain: Sequence[ChainLink],
        request: ProviderRequest,
        *,
        contract_id: str | None = None,
        approved: Collection[str] = (),
    ) -> FailoverResult:
        """Drive ``job_id`` through ``chain`` until it succeeds, must wait, or runs out."""
        job = await self.db.get_job(self.owner_id, job_id)
        run = _Run(self, job_id, contract_id or job.intent.contract, request, approved)
        if job.status in (JobStatus.SUCCEEDED, JobStatus.CANCELLED):
            return await run.finish(RunStatus.ALREADY_COMPLETED, result=job.result)
        hedge_ok = self.hedge is not None and job.intent.policy.max_open_attempts >= 2
        try:
            await run.prepare(chain)
            status = await run.walk(hedge_ok)
        except _Stop as stop:
            status, blocking, next_provider = stop.status, stop.blocking, stop.next_provider
        else:
            blocking = next_provider = None
        job = await self.db.get_job(self.owner_id, job_id)
        return await run.finish(status, result=job.result, blocking=blocking,
                                next_provider=next_provider)


class _Run:
    """The state of one run of one job."""

    def __init__(self, runner: FailoverRunner, job_id: str, contract: str,
                 request: ProviderRequest, approved: Collection[str]) -> None:
        self.r, self.job_id, self.contract, self.request = runner, job_id, contract, request
        self.approved = set(approved)
        self.pending: list[tuple[int, ChainLink]] = []
        self.skipped: list[SkippedLink] = []
        self.started: list[str] = []
        self.deferred_stop: _Stop | None = None
        self.validator = jsonschema.Draft202012Validator(request.schema)

    # -- bookkeeping -------------------------------------------------------------------------

    async def finish(self, status: RunStatus, *, result: Any = None,
                     blocking: str | None = None,
                     next_provider: str | None = None) -> FailoverResult:
        mine = set(self.started)
        attempts = [a for a in await self.r.db.list_attempts(self.r.owner_id, self.job_id)
                    if a.id in mine]
        out = FailoverResult(status, self.job_id, result, attempts, list(self.skipped),
                             blocking, next_provider)
        log.info("%s", out.summary())
        return out

    def skip(self, link: ChainLink, reason: str) -> None:
        self.skipped.append(SkippedLink(link.provider, redact(reason)))

    async def prepare(self, chain: Sequence[ChainLink]) -> None:
        """Refuse to start while an attempt is open; resume after the providers already tried."""
        previous = await self.r.db.list_attempts(self.r.owner_id, self.job_id)
        open_ = [a for a in previous if a.is_open]
        unknown = [a for a in open_ if a.state is AttemptState.UNKNOWN]
        if unknown:
            raise _Stop(RunStatus.WAITING_ON_UNKNOWN, blocking=unknown[0].id)
        if open_:
            raise _Stop(RunStatus.IN_FLIGHT, blocking=open_[0].id)
        tried = {a.provider for a in previous}
        for index, link in enumerate(chain):
            if link.provider in tried:
                self.skip(link, "already tried for this job")
            else:
                self.pending.append((index, link))

    def next_link(self) -> ChainLink | None:
        """The next usable link, recording the ones skipped; _Stop for an unapproved manual link."""
        while self.pending:
            index, link = self.pending.pop(0)
            if index == 0:
                return link  # the primary is not failover
            if link.failover == "off":
                self.skip(link, "failover: off in providers.yaml")
                continue
            if link.failover == "manual" and link.provider not in self.approved:
                raise _Stop(RunStatus.NEEDS_APPROVAL, next_provider=link.provider)
            eligible, reason = self.r.eligibility.is_eligible(link.provider, self.contract)
            if not eligible:
                self.skip(link, f"not eligible for {self.contract}: {reason}")
                continue
            if link.provider not in self.r.clients:
                self.skip(link, "no client configured for this provider")
                continue
            return link
        return None

    # -- the walk ----------------------------------------------------------------------------

    async def walk(self, hedge_ok: bool) -> RunStatus:
        while True:
            if self.deferred_stop is not None:  # a manual link came up while hedging
                raise self.deferred_stop
            link = self.next_link()
            if link is None:
                return RunStatus.EXHAUSTED
            flights = [await self.launch(link)]
            if hedge_ok:
                hedge_ok = False  # at most one hedge per run: the store allows two open slots
                if not await self._answered_before_hedge(flights[0]):
                    try:
                        second = self.next_link()
                    except _Stop as stop:  # a manual link: ask only if the first one fails
                        self.deferred_stop, second = stop, None
                    if second is not None:
                        flights.append(await self.launch(second))
            outcome = await self.settle(flights)
            if outcome is not None:
                return outcome

    async def _answered_before_hedge(self, flight: _Flight) -> bool:
        assert self.r.hedge is not None
        timer = asyncio.ensure_future(self.r.hedge_timer(self.r.hedge.delay_s))
        try:
            await asyncio.wait({flight.task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        return flight.task.done()

    async def launch(self, link: ChainLink) -> _Flight:
        db, owner = self.r.db, self.r.owner_id
        try:
            attempt = await db.start_attempt(owner, self.job_id, link.provider)
        except AttemptInFlight as exc:  # another worker got in first
            raise _Stop(RunStatus.IN_FLIGHT, blocking=exc.blocking_attempt_id) from None
        except JobCompleted:
            raise _Stop(RunStatus.ALREADY_COMPLETED) from None
        self.started.append(attempt.id)
        attempt = await db.dispatch(owner, attempt.id)  # before the request leaves
        client = self.r.clients[link.provider]
        return _Flight(attempt, asyncio.ensure_future(client.complete(self.request)))

    async def settle(self, flights: list[_Flight]) -> RunStatus | None:
        """Wait for the flights; SUCCEEDED / ALREADY_COMPLETED / WAITING, or None to go on."""
        remaining = {f.task: f for f in flights}
        unknown: str | None = None
        try:
            while remaining:
                done, _ = await asyncio.wait(remaining, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    flight = remaining.pop(task)
                    outcome = await self.record(flight)
                    if outcome in (ClaimOutcome.WON, ClaimOutcome.LOST):
                        await self.cancel_rest(remaining, flight)
                        remaining.clear()
                        return (RunStatus.SUCCEEDED if outcome is ClaimOutcome.WON
                                else RunStatus.ALREADY_COMPLETED)
                    if outcome is AttemptState.UNKNOWN:
                        unknown = unknown or flight.attempt.id
        except asyncio.CancelledError:
            # The run itself was cancelled: the calls may have left, so their outcome is unknown.
            # The thread runs each write to the end even if this task is cancelled again.
            for flight in remaining.values():
                flight.task.cancel()
                await self.r.db.time_out(self.r.owner_id, flight.attempt.id)
            raise
        if unknown is not None:
            raise _Stop(RunStatus.WAITING_ON_UNKNOWN, blocking=unknown)
        return None

    async def cancel_rest(self, remaining: dict[asyncio.Task[ProviderReply], _Flight],
                          winner: _Flight) -> None:
        for task, flight in remaining.items():
            if task.done():  # answered meanwhile: record it honestly (a lost claim, or a failure)
                await self.record(flight)
                continue
            task.cancel()
            await self.r.db.cancel(self.r.owner_id, flight.attempt.id,
                                   f"hedge: attempt {winner.attempt.id} answered first")

    async def record(self, flight: _Flight) -> ClaimOutcome | AttemptState:
        """Post the outcome of a finished call; the claim outcome, or the attempt's new state."""
        db, owner, attempt_id = self.r.db, self.r.owner_id, flight.attempt.id
        try:
            reply = flight.task.result()
        except ProviderCallError as exc:
            if exc.classification == "unknown":
                await db.time_out(owner, attempt_id)
                return AttemptState.UNKNOWN
            await db.fail(owner, attempt_id, exc.to_error())
            return AttemptState.FAILED
        except Exception:
            await db.time_out(owner, attempt_id)  # a bug after the request left: assume sent
            raise
        problem = self.check(reply)
        if problem is not None:
            await db.fail(owner, attempt_id, problem)
            return AttemptState.FAILED
        outcome = (await db.succeed(owner, attempt_id, reply.parsed)).outcome
        assert outcome is not None
        return outcome

    def check(self, reply: ProviderReply) -> dict[str, Any] | None:
        """The ``error`` for an answer that cannot be the job's result, or None if it can."""
        base = {"classification": "failed", "request_id": reply.request_id}
        if reply.refusal:
            return {**base, "code": "refused", "message": redact(reply.refusal)[:500]}
        if reply.parsed is None:
            return {**base, "code": "invalid_json",
                    "message": f"the answer is not a JSON object (finish_reason "
                               f"{reply.finish_reason!r}, {len(reply.text)} characters)"}
        error = jsonschema.exceptions.best_match(self.validator.iter_errors(reply.parsed))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            return {**base, "code": "schema_violation",
                    "message": redact(f"at {where}: {error.message}")[:500]}
        return None
