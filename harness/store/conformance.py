"""Conformance checks: the store rules of DESIGN.md, run against any open store, as verdicts.

Each check gets a fresh owner namespace on the store it is given, runs one promise end to end
(with real threads where the promise is about concurrency) and returns a :class:`CheckResult`.
The CLI's ``check`` runs them on the embedded store; users run them on their own database.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from harness.domain import (
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    HarnessError,
    IdempotencyKeyReused,
    Intent,
    JobStatus,
    Policy,
)
from harness.store.sqlstore import SqlStore


@dataclass(frozen=True)
class CheckResult:
    """One promise: held or broken, with what was seen."""

    name: str
    promise: str
    passed: bool
    detail: str
    seconds: float


class _Broken(Exception):
    pass


def _expect(condition: bool, detail: str) -> None:
    if not condition:
        raise _Broken(detail)


def _double_click(store: SqlStore, owner: str) -> str:
    n = 32
    barrier = threading.Barrier(n)
    intent = Intent(contract="conformance", input={"click": 1})

    def click(_: int) -> tuple[str, bool]:
        barrier.wait()
        r = store.create_job(owner, "double-click", intent)
        return r.job.id, r.created

    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(click, range(n)))
    ids = {i for i, _ in results}
    created = sum(c for _, c in results)
    _expect(len(ids) == 1, f"{n} concurrent clicks made {len(ids)} jobs")
    _expect(created == 1, f"{created} of {n} clicks were told they created the job")
    return f"{n} concurrent clicks → 1 job, 1 created, {n - 1} replays"


def _same_intent(store: SqlStore, owner: str) -> str:
    a = store.create_job(owner, "k", Intent.from_json({"contract": "c", "input": {"a": 1, "b": 2}}))
    b = store.create_job(owner, "k", Intent.from_json({"input": {"b": 2.0, "a": 1}, "contract": "c"}))
    _expect(a.job.id == b.job.id and not b.created, "reordered keys / 1.0 made a second job")
    return "reordered keys and 1 vs 1.0 → the same job"


def _mismatch(store: SqlStore, owner: str) -> str:
    first = store.create_job(owner, "k", Intent(contract="c", input={"amount": 10}))
    try:
        store.create_job(owner, "k", Intent(contract="c", input={"amount": 99}))
    except IdempotencyKeyReused:
        pass
    else:
        raise _Broken("the same key with another body was accepted")
    after = store.get_job(owner, first.job.id)
    _expect(after == first.job, "the refused request changed the job")
    return "same key, other body → idempotency_key_reused, job unchanged"


def _other_owner(store: SqlStore, owner: str) -> str:
    intent = Intent(contract="c", input={})
    mine = store.create_job(owner, "k", intent)
    theirs = store.create_job(owner + "-other", "k", intent)
    _expect(mine.job.id != theirs.job.id, "two owners' identical keys shared one job")
    try:
        store.get_job(owner + "-other", mine.job.id)
    except HarnessError as exc:
        _expect(exc.http_status == 404, f"another owner's job gave {exc.http_status}, not 404")
    else:
        raise _Broken("another owner could read the job")
    return "same key, other owner → another job; reading it is 404"


def _timeout_blocks(store: SqlStore, owner: str) -> str:
    job = store.create_job(owner, "k", Intent(contract="c", input={})).job
    a = store.start_attempt(owner, job.id, "primary")
    store.dispatch(owner, a.id)
    state = store.time_out(owner, a.id).state
    _expect(state is AttemptState.UNKNOWN, f"a timed-out attempt is {state}, not unknown")
    _expect(store.get_job(owner, job.id).status is JobStatus.RUNNING, "the job left running")
    try:
        store.start_attempt(owner, job.id, "fallback")
    except AttemptInFlight as exc:
        _expect(exc.blocking_attempt_id == a.id, "the refusal named the wrong blocker")
    else:
        raise _Broken("a second attempt started while the first was unknown")
    return "timeout → unknown, job running, new attempts refused naming the blocker"


def _reverse_order(store: SqlStore, owner: str) -> str:
    intent = Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    job = store.create_job(owner, "k", intent).job
    a = store.start_attempt(owner, job.id, "primary")
    b = store.start_attempt(owner, job.id, "fallback")
    won = store.succeed(owner, b.id, {"by": "B"}).outcome
    lost = store.succeed(owner, a.id, {"by": "A"}).outcome
    final = store.get_job(owner, job.id)
    _expect(won is ClaimOutcome.WON and lost is ClaimOutcome.LOST, f"B {won}, A {lost}")
    _expect(final.result == {"by": "B"}, f"the job holds {final.result}, not B's result")
    _expect(final.version == job.version + 1, "the version did not rise exactly once")
    races = store.list_races(owner, job.id)
    _expect(len(races) == 1 and races[0].attempt_id == a.id, "A's lost claim was not recorded")
    return "B (second out, first back) wins; A's late claim is lost and recorded"


def _cancelled_never_wins(store: SqlStore, owner: str) -> str:
    job = store.create_job(owner, "k", Intent(contract="c", input={})).job
    a = store.start_attempt(owner, job.id, "primary")
    store.cancel(owner, a.id, "conformance")
    outcome = store.succeed(owner, a.id, {"late": True}).outcome
    final = store.get_job(owner, job.id)
    _expect(outcome is ClaimOutcome.LOST and final.result is None, "a cancelled attempt won")
    return "a cancelled attempt's late result is lost, even with no other winner"


CHECKS: list[tuple[str, str, Callable[[SqlStore, str], str]]] = [
    ("double_click", "one click, one job", _double_click),
    ("same_intent", "the same intent is the same job", _same_intent),
    ("mismatched_key", "a reused key is refused and changes nothing", _mismatch),
    ("other_owner", "owners are isolated", _other_owner),
    ("timeout_unknown", "a timeout is unknown and blocks", _timeout_blocks),
    ("out_of_order", "one winner per job; the late result is discarded", _reverse_order),
    ("cancelled_never_wins", "a cancelled attempt never wins", _cancelled_never_wins),
]


def run_conformance(store: SqlStore) -> list[CheckResult]:
    """Run every check on ``store``, each in its own owner namespace."""
    results = []
    for name, promise, check in CHECKS:
        owner = f"conformance-{uuid.uuid4().hex[:12]}"
        started = time.perf_counter()
        try:
            detail, passed = check(store, owner), True
        except _Broken as broken:
            detail, passed = str(broken), False
        except HarnessError as exc:
            detail, passed = f"unexpected {exc.code}: {exc.message}", False
        results.append(CheckResult(name, promise, passed, detail, time.perf_counter() - started))
    return results
