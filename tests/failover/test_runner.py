"""The failover runner on a real store (SQLite and PostgreSQL) with in-process fake providers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from harness.domain import AttemptState, ClaimOutcome, JobStatus
from harness.failover import FailoverRunner, HedgePolicy, RunStatus
from harness.providers import ProviderRequest
from harness.store import SqlStore
from tests.failover.conftest import (
    CONTRACT,
    OWNER,
    Gate,
    Providers,
    StubEligibility,
    chain,
    new_job,
    providers_of,
    states,
)

WAIT_S = 10.0  # every wait on an event is bounded: a missed event fails, never hangs


def runner(store: SqlStore, providers: Providers, certified: set[str],
           **kwargs: object) -> tuple[FailoverRunner, StubEligibility]:
    eligibility = StubEligibility(certified)
    return FailoverRunner(store, OWNER, clients=providers.clients, eligibility=eligibility,
                          **kwargs), eligibility  # type: ignore[arg-type]


def test_429_on_the_primary_fails_over_under_the_same_job(
        store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "status:429", "openai-chat"),
                              ("fallback", "conformant", "anthropic-messages")])
    job = new_job(store)
    run, eligibility = runner(store, providers, {"fallback"})
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)

    assert result.status is RunStatus.SUCCEEDED
    first, second = store.list_attempts(OWNER, job.id)  # one job, two attempts
    assert (first.provider, first.state) == ("primary", AttemptState.FAILED)
    assert first.error is not None
    assert first.error["code"] == "rate_limit_exceeded"
    assert first.error["classification"] == "failed" and first.error["retry_after_s"] == 1.0
    assert (second.provider, second.state, second.outcome) == (
        "fallback", AttemptState.SUCCEEDED, ClaimOutcome.WON)
    done = store.get_job(OWNER, job.id)
    assert done.status is JobStatus.SUCCEEDED and done.completed_by == second.id
    assert done.result["tags"] == ["fallback"] == result.result["tags"]
    assert providers.deliveries() == {"primary": 1, "fallback": 1}  # one call per attempt
    assert eligibility.calls == [("fallback", CONTRACT)]  # never asked about the primary
    assert [a.id for a in result.attempts] == [first.id, second.id]


@pytest.mark.parametrize("behaviour", ["hang", "reset-after-send", "truncated", "status:504"])
def test_an_unknown_outcome_holds_the_job_until_it_is_resolved(
        store: SqlStore, ticket: ProviderRequest, behaviour: str) -> None:
    providers = providers_of([("primary", behaviour, "anthropic-messages"),
                              ("fallback", "conformant", "openai-chat")])
    job = new_job(store)
    run, eligibility = runner(store, providers, {"fallback"})
    links = chain("primary", "fallback")

    waiting = run.run_sync(job.id, links, ticket)
    (attempt,) = store.list_attempts(OWNER, job.id)
    assert waiting.status is RunStatus.WAITING_ON_UNKNOWN
    assert waiting.blocking_attempt_id == attempt.id
    assert attempt.state is AttemptState.UNKNOWN  # never failed
    assert store.get_job(OWNER, job.id).status is JobStatus.RUNNING
    assert providers.deliveries() == {"primary": 1, "fallback": 0}
    assert eligibility.calls == []  # it did not even look for a fallback

    again = run.run_sync(job.id, links, ticket)  # a retry click changes nothing
    assert again.status is RunStatus.WAITING_ON_UNKNOWN and again.attempts == []
    assert providers.deliveries() == {"primary": 1, "fallback": 0}

    # An operator learns the provider never processed it and cancels the attempt: now resume.
    store.cancel(OWNER, attempt.id, "provider confirmed: request not processed")
    resumed = run.run_sync(job.id, links, ticket)
    assert resumed.status is RunStatus.SUCCEEDED
    assert states(store, job.id) == [("primary", "cancelled"), ("fallback", "succeeded")]
    assert [s.provider for s in resumed.skipped] == ["primary"]  # already tried: not re-sent
    assert providers.deliveries() == {"primary": 1, "fallback": 1}


def test_an_unknown_attempt_resolved_as_succeeded_completes_the_job(
        store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "hang", "openai-chat"),
                              ("fallback", "conformant", "openai-chat")])
    job = new_job(store)
    run, _ = runner(store, providers, {"fallback"})
    waiting = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert waiting.blocking_attempt_id is not None
    store.succeed(OWNER, waiting.blocking_attempt_id, {"category": "bug", "priority": 1,
                                                       "needs_human": True, "tags": []})
    later = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert later.status is RunStatus.ALREADY_COMPLETED and later.result["category"] == "bug"
    assert providers.deliveries() == {"primary": 1, "fallback": 0}


def test_links_that_are_not_eligible_or_off_are_skipped_with_the_reason(
        store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "status:503", "openai-chat"),
                              ("second", "conformant", "openai-chat"),
                              ("third", "conformant", "anthropic-messages"),
                              ("fallback", "conformant", "anthropic-messages")])
    job = new_job(store)
    run, eligibility = runner(store, providers, {"third", "fallback"})
    result = run.run_sync(job.id, chain("primary", "second", ("third", "off"), "fallback"),
                          ticket)
    assert result.status is RunStatus.SUCCEEDED
    assert [(s.provider, s.reason.split(":")[0]) for s in result.skipped] == [
        ("second", f"not eligible for {CONTRACT}"), ("third", "failover")]
    assert "no certification" in result.skipped[0].reason
    assert states(store, job.id) == [("primary", "failed"), ("fallback", "succeeded")]
    assert providers.deliveries() == {"primary": 1, "second": 0, "third": 0, "fallback": 1}
    assert eligibility.calls == [("second", CONTRACT), ("fallback", CONTRACT)]
    assert "skipped second" in result.summary()


def test_a_chain_that_runs_out_leaves_the_job_running(
        store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "status:500", "openai-chat"),
                              ("fallback", "status:529", "anthropic-messages")])
    job = new_job(store)
    run, _ = runner(store, providers, {"fallback"})
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert result.status is RunStatus.EXHAUSTED and result.result is None
    assert states(store, job.id) == [("primary", "failed"), ("fallback", "failed")]
    assert store.get_job(OWNER, job.id).status is JobStatus.RUNNING
    assert store.list_attempts(OWNER, job.id)[1].error["code"] == "overloaded_error"


def test_a_manual_link_waits_for_approval(store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "status:429", "openai-chat"),
                              ("fallback", "conformant", "anthropic-messages"),
                              ("third", "conformant", "openai-chat")])
    job = new_job(store)
    run, _ = runner(store, providers, {"fallback", "third"})
    links = chain("primary", ("fallback", "manual"), "third")
    held = run.run_sync(job.id, links, ticket)
    assert held.status is RunStatus.NEEDS_APPROVAL and held.next_provider == "fallback"
    assert providers.deliveries() == {"primary": 1, "fallback": 0, "third": 0}  # not skipped past
    approved = run.run_sync(job.id, links, ticket, approved={"fallback"})
    assert approved.status is RunStatus.SUCCEEDED
    assert providers.deliveries() == {"primary": 1, "fallback": 1, "third": 0}


@pytest.mark.parametrize(("behaviour", "code"), [
    ("hallucinated-key", "schema_violation"),
    ("wrong-types", "schema_violation"),
    ("fenced-json", "invalid_json"),
    ("prose", "invalid_json"),
    ("refusal", "refused"),
])
def test_an_answer_that_cannot_be_the_result_fails_the_attempt(
        store: SqlStore, ticket: ProviderRequest, behaviour: str, code: str) -> None:
    providers = providers_of([("primary", behaviour, "anthropic-messages"),
                              ("fallback", "conformant", "openai-chat")])
    job = new_job(store)
    run, _ = runner(store, providers, {"fallback"})
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert result.status is RunStatus.SUCCEEDED
    first = store.list_attempts(OWNER, job.id)[0]
    assert first.state is AttemptState.FAILED and first.error["code"] == code
    assert store.get_job(OWNER, job.id).result["tags"] == ["fallback"]


def test_a_completed_job_takes_no_attempt(store: SqlStore, ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "conformant", "openai-chat")])
    job = new_job(store)
    run, _ = runner(store, providers, set())
    assert run.run_sync(job.id, chain("primary"), ticket).status is RunStatus.SUCCEEDED
    again = run.run_sync(job.id, chain("primary"), ticket)  # the double click
    assert again.status is RunStatus.ALREADY_COMPLETED and again.attempts == []
    assert providers.deliveries() == {"primary": 1}


def test_another_workers_open_attempt_blocks_the_run(store: SqlStore,
                                                     ticket: ProviderRequest) -> None:
    providers = providers_of([("primary", "conformant", "openai-chat")])
    job = new_job(store)
    other = store.dispatch(OWNER, store.start_attempt(OWNER, job.id, "primary").id)
    run, _ = runner(store, providers, set())
    result = run.run_sync(job.id, chain("primary"), ticket)
    assert result.status is RunStatus.IN_FLIGHT and result.blocking_attempt_id == other.id
    assert providers.deliveries() == {"primary": 0}


def test_cancelling_the_run_mid_call_leaves_the_attempt_unknown(
        store: SqlStore, ticket: ProviderRequest) -> None:
    providers = Providers()
    gates: list[Gate] = []
    providers.add("primary", "conformant", wrap=lambda t: gates.append(Gate(t)) or gates[-1])
    job = new_job(store)
    run, _ = runner(store, providers, set())

    async def main() -> None:
        task = asyncio.ensure_future(run.run(job.id, chain("primary"), ticket))
        await asyncio.wait_for(gates[0].entered.wait(), WAIT_S)  # the request is on its way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert states(store, job.id) == [("primary", "unknown")]


# -- hedging -------------------------------------------------------------------------------------

def hedged(store: SqlStore) -> tuple[FailoverRunner, Gate, list[float]]:
    providers = Providers()
    gates: list[Gate] = []
    providers.add("primary", "conformant", wrap=lambda t: gates.append(Gate(t)) or gates[-1])
    providers.add("fallback", "conformant", "anthropic-messages")
    timer_calls: list[float] = []

    async def timer(delay_s: float) -> None:  # fires once the primary's request is in flight
        timer_calls.append(delay_s)
        await asyncio.wait_for(gates[0].entered.wait(), WAIT_S)

    run, _ = runner(store, providers, {"fallback"}, hedge=HedgePolicy(delay_s=2.0),
                    hedge_timer=timer)
    return run, gates[0], timer_calls


def test_a_hedge_starts_a_second_attempt_and_the_first_answer_wins(
        store: SqlStore, ticket: ProviderRequest) -> None:
    job = new_job(store, max_open_attempts=2)
    run, gate, timer_calls = hedged(store)
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert result.status is RunStatus.SUCCEEDED and timer_calls == [2.0]
    primary, fallback = store.list_attempts(OWNER, job.id)
    assert (fallback.state, fallback.outcome) == (AttemptState.SUCCEEDED, ClaimOutcome.WON)
    assert primary.state is AttemptState.CANCELLED
    assert primary.cancel_reason == f"hedge: attempt {fallback.id} answered first"
    assert store.list_races(OWNER, job.id) == []  # the cancelled attempt never claimed
    assert not gate.release.is_set()


def test_no_hedge_when_the_job_allows_one_open_attempt(store: SqlStore,
                                                       ticket: ProviderRequest) -> None:
    job = new_job(store, max_open_attempts=1)
    run, gate, timer_calls = hedged(store)
    gate.release.set()
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert result.status is RunStatus.SUCCEEDED and timer_calls == []
    assert states(store, job.id) == [("primary", "succeeded")]


def test_no_hedge_when_the_primary_answers_first(store: SqlStore,
                                                 ticket: ProviderRequest) -> None:
    job = new_job(store, max_open_attempts=2)
    run, gate, timer_calls = hedged(store)
    gate.release.set()  # the primary answers at once, and the hedge timer never fires

    async def never(delay_s: float) -> None:
        timer_calls.append(delay_s)
        await asyncio.Event().wait()

    run.hedge_timer = never
    result = run.run_sync(job.id, chain("primary", "fallback"), ticket)
    assert result.status is RunStatus.SUCCEEDED and timer_calls == [2.0]
    assert states(store, job.id) == [("primary", "succeeded")]


class _StallingStore:
    """A store whose first ``method`` call stalls in the database until the event loop that
    made it runs again: it tells the loop it has entered (``call_soon_threadsafe``), and waits
    for a coroutine on that loop to let it go. A loop that runs store calls itself can never
    run that coroutine, so the call gives up after ``limit`` seconds and says so."""

    def __init__(self, store: SqlStore, method: str, loop: asyncio.AbstractEventLoop,
                 limit: float = 5.0) -> None:
        self.store, self.method, self.loop, self.limit = store, method, loop, limit
        self.entered = asyncio.Event()
        self.release = threading.Event()
        self.stalled: list[bool] = []  # True: released by the loop; False: the loop was blocked

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name != self.method:
            return real

        def stalling(*args: Any) -> Any:
            if not self.stalled:
                self.loop.call_soon_threadsafe(self.entered.set)
                self.stalled.append(self.release.wait(self.limit))
            return real(*args)

        return stalling


@pytest.mark.parametrize("method", ["get_job", "list_attempts", "start_attempt", "dispatch",
                                    "succeed"])
def test_store_calls_never_block_the_event_loop(store: SqlStore, ticket: ProviderRequest,
                                                method: str) -> None:
    providers = providers_of([("primary", "conformant", "openai-chat")])
    job = new_job(store)

    async def main() -> RunStatus:
        stalling = _StallingStore(store, method, asyncio.get_running_loop())
        run, _ = runner(stalling, providers, set())  # type: ignore[arg-type]

        async def let_go() -> None:  # runs only if the loop is free while the store works
            await asyncio.wait_for(stalling.entered.wait(), WAIT_S)
            stalling.release.set()

        helper = asyncio.create_task(let_go())
        result = await run.run(job.id, chain("primary"), ticket)
        await helper
        assert stalling.stalled == [True], f"{method} blocked the event loop"
        return result.status

    assert asyncio.run(main()) is RunStatus.SUCCEEDED
