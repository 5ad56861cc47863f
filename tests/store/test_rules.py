"""The store's rules (DESIGN.md), each on real SQLite and real PostgreSQL."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from harness.domain import (
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    IdempotencyKeyReused,
    Intent,
    InvalidTransition,
    JobCompleted,
    JobStatus,
    NotFound,
    Policy,
)
from harness.store import SqlStore

WAIT_S = 30.0  # a barrier that is not met in this time breaks (BrokenBarrierError): no hang
INTENT = Intent(contract="ticket_triage", input={"ticket": "printer on fire", "n": 3})


def raw_rows(store: SqlStore, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` exactly as the database holds it."""
    with store.transaction(write=False) as tx:
        conn = tx.conn  # type: ignore[attr-defined]
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY seq").fetchall()
    return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]


def test_double_click_32_threads_make_one_job(store: SqlStore) -> None:
    barrier = threading.Barrier(32, timeout=WAIT_S)

    def click(_: int) -> tuple[str, bool]:
        barrier.wait()
        result = store.create_job("alice", "click-1", INTENT)
        return result.job.id, result.created

    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(click, range(32)))
    assert len({job_id for job_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert len(raw_rows(store, "jobs")) == 1


def test_the_same_intent_written_differently_is_the_same_job(store: SqlStore) -> None:
    texts = [
        '{"contract": "c", "input": {"a": 1, "b": [1, 2]}, "params": {"t": 0.5}}',
        '{"params":{"t":0.50},"input":{"b":[1.0,2],"a":1.0},"contract":"c"}',
        '{\n  "input": {"b": [1, 2.0], "a": 1},\n\t"contract": "c",\n  "params": {"t": 5e-1}\n}',
    ]
    results = [store.create_job("alice", "k", Intent.from_json(json.loads(t))) for t in texts]
    assert [r.created for r in results] == [True, False, False]
    assert len({r.job.id for r in results}) == 1


def test_defaults_filled_in_make_the_same_fingerprint(store: SqlStore) -> None:
    bare = store.create_job("alice", "k", Intent.from_json({"contract": "c", "input": {}}))
    full = store.create_job(
        "alice",
        "k",
        Intent.from_json(
            {"contract": "c", "input": {}, "params": {}, "policy": {"max_open_attempts": 1}}
        ),
    )
    assert full.job.id == bare.job.id and not full.created


def test_same_key_other_body_is_refused_and_changes_nothing(store: SqlStore) -> None:
    store.create_job("alice", "k", INTENT)
    before = (raw_rows(store, "jobs"), raw_rows(store, "attempts"))
    other = Intent(contract="ticket_triage", input={"ticket": "printer fine", "n": 3})
    with pytest.raises(IdempotencyKeyReused) as err:
        store.create_job("alice", "k", other)
    assert err.value.code == "idempotency_key_reused"
    assert (raw_rows(store, "jobs"), raw_rows(store, "attempts")) == before


def test_same_key_other_owner_is_another_job_and_invisible(store: SqlStore) -> None:
    alice = store.create_job("alice", "k", INTENT)
    bob = store.create_job("bob", "k", INTENT)
    assert bob.created and alice.job.id != bob.job.id
    with pytest.raises(NotFound):
        store.get_job("bob", alice.job.id)
    with pytest.raises(NotFound):
        store.start_attempt("bob", alice.job.id, "p")
    attempt = store.start_attempt("alice", alice.job.id, "p")
    with pytest.raises(NotFound):
        store.get_attempt("bob", attempt.id)
    with pytest.raises(NotFound):
        store.dispatch("bob", attempt.id)
    with pytest.raises(NotFound):
        store.list_races("bob", alice.job.id)


def test_timeout_is_unknown_keeps_the_job_running_and_blocks(store: SqlStore) -> None:
    job = store.create_job("alice", "k", INTENT).job
    a = store.start_attempt("alice", job.id, "primary")
    store.dispatch("alice", a.id)
    assert store.time_out("alice", a.id).state is AttemptState.UNKNOWN
    assert store.get_job("alice", job.id).status is JobStatus.RUNNING
    with pytest.raises(AttemptInFlight) as err:
        store.start_attempt("alice", job.id, "fallback")
    assert err.value.blocking_attempt_id == a.id
    assert err.value.to_problem()["blocking_attempt_id"] == a.id
    # Resolving the unknown attempt (the provider confirms a failure) frees the slot.
    store.fail("alice", a.id, {"code": "provider_error", "message": "confirmed lost"})
    b = store.start_attempt("alice", job.id, "fallback")
    store.time_out("alice", b.id)
    with pytest.raises(AttemptInFlight):
        store.start_attempt("alice", job.id, "third")
    # Cancelling out-of-band frees it too.
    store.cancel("alice", b.id, "operator confirmed the provider dropped it")
    assert store.start_attempt("alice", job.id, "third").state is AttemptState.STARTING


def test_reverse_order_completion_the_fallback_wins(store: SqlStore) -> None:
    job = store.create_job(
        "alice", "k", Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    ).job
    a = store.start_attempt("alice", job.id, "primary")
    store.dispatch("alice", a.id)
    b = store.start_attempt("alice", job.id, "fallback")
    store.dispatch("alice", b.id)
    with pytest.raises(AttemptInFlight):
        store.start_attempt("alice", job.id, "third")
    won = store.succeed("alice", b.id, {"answer": "B"})
    lost = store.succeed("alice", a.id, {"answer": "A"})
    assert won.outcome is ClaimOutcome.WON and lost.outcome is ClaimOutcome.LOST
    assert lost.attempt.state is AttemptState.SUCCEEDED
    assert lost.attempt.outcome is ClaimOutcome.LOST
    final = store.get_job("alice", job.id)
    assert final.result == {"answer": "B"} and final.completed_by == b.id
    assert final.version == job.version + 1
    races = store.list_races("alice", job.id)
    assert [(r.attempt_id, r.winner_attempt_id, r.reason) for r in races] == [
        (a.id, b.id, "already_completed")
    ]
    assert races[0].payload_sha256 == lost.attempt.result_sha256
    assert "A" not in json.dumps([r.to_json() for r in races])
    with pytest.raises(JobCompleted):
        store.start_attempt("alice", job.id, "again")


def test_a_cancelled_attempt_never_wins_even_alone(store: SqlStore) -> None:
    job = store.create_job("alice", "k", INTENT).job
    a = store.start_attempt("alice", job.id, "primary")
    store.dispatch("alice", a.id)
    store.cancel("alice", a.id, "user gave up")
    late = store.succeed("alice", a.id, {"answer": "late"})
    assert late.outcome is ClaimOutcome.LOST
    assert late.attempt.state is AttemptState.CANCELLED
    after = store.get_job("alice", job.id)
    assert after.result is None and after.completed_by is None and after.version == job.version
    (race,) = store.list_races("alice", job.id)
    assert race.reason == "attempt_cancelled" and race.winner_attempt_id is None
    # The same late result again is idempotent: no second race.
    again = store.succeed("alice", a.id, {"answer": "late"})
    assert again.outcome is ClaimOutcome.LOST and len(store.list_races("alice", job.id)) == 1


def test_a_repeated_success_is_idempotent_and_another_result_refused(store: SqlStore) -> None:
    job = store.create_job("alice", "k", INTENT).job
    a = store.start_attempt("alice", job.id, "p")
    first = store.succeed("alice", a.id, {"v": 1})
    second = store.succeed("alice", a.id, {"v": 1.0})
    assert first.outcome is second.outcome is ClaimOutcome.WON
    assert first.attempt == second.attempt
    with pytest.raises(InvalidTransition):
        store.succeed("alice", a.id, {"v": 2})
    assert store.get_job("alice", job.id).version == job.version + 1


@pytest.mark.parametrize(
    ("setup", "event"),
    [
        ([], "time_out_twice"),
        (["fail"], "dispatch"),
        (["succeed"], "cancel"),
        (["cancel"], "dispatch"),
        (["dispatch"], "dispatch"),
    ],
)
def test_forbidden_transitions_are_refused_and_write_nothing(
    store: SqlStore, setup: list[str], event: str
) -> None:
    job = store.create_job("alice", "k", INTENT).job
    a = store.start_attempt("alice", job.id, "p")
    do = {
        "dispatch": lambda: store.dispatch("alice", a.id),
        "fail": lambda: store.fail("alice", a.id, {"code": "x", "message": "y"}),
        "succeed": lambda: store.succeed("alice", a.id, {"ok": True}),
        "cancel": lambda: store.cancel("alice", a.id, "r"),
        "time_out_twice": lambda: store.time_out("alice", a.id),
    }
    for step in setup:
        do[step]()
    if event == "time_out_twice":
        do["time_out_twice"]()
    before = (raw_rows(store, "jobs"), raw_rows(store, "attempts"), raw_rows(store, "races"))
    with pytest.raises(InvalidTransition) as err:
        do[event]()
    assert err.value.extra["from_state"] and err.value.extra["to_state"]
    after = (raw_rows(store, "jobs"), raw_rows(store, "attempts"), raw_rows(store, "races"))
    assert after == before


def test_a_hedge_allows_exactly_two_open_attempts_under_contention(store: SqlStore) -> None:
    job = store.create_job(
        "alice", "k", Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    ).job
    barrier = threading.Barrier(12, timeout=WAIT_S)

    def start(i: int) -> str:
        barrier.wait()
        try:
            return store.start_attempt("alice", job.id, f"p{i}").id
        except AttemptInFlight:
            return "blocked"

    with ThreadPoolExecutor(12) as pool:
        outcomes = list(pool.map(start, range(12)))
    assert sum(o != "blocked" for o in outcomes) == 2
    assert len(store.list_attempts("alice", job.id)) == 2


@pytest.mark.parametrize("round_", range(8))
def test_concurrent_claims_have_exactly_one_winner(store: SqlStore, round_: int) -> None:
    job = store.create_job(
        "alice", "k", Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    ).job
    attempts = [store.start_attempt("alice", job.id, p) for p in ("a", "b")]
    barrier = threading.Barrier(2, timeout=WAIT_S)

    def claim(i: int) -> ClaimOutcome | None:
        barrier.wait()
        return store.succeed("alice", attempts[i].id, {"by": i}).outcome

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(claim, range(2)))
    assert sorted(o.value for o in outcomes if o) == ["lost", "won"]
    final = store.get_job("alice", job.id)
    winner = outcomes.index(ClaimOutcome.WON)
    assert final.version == 2 and final.result == {"by": winner}
    assert final.completed_by == attempts[winner].id
    races = store.list_races("alice", job.id)
    # The race names the winner, even when the loser's claim waited on the winner's lock.
    assert [(r.attempt_id, r.winner_attempt_id, r.reason) for r in races] == [
        (attempts[1 - winner].id, attempts[winner].id, "already_completed")]
