"""Mutants: one overridden method each, and each really breaks its rule on both databases."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.domain import (
    AttemptInFlight,
    AttemptState,
    ClaimOutcome,
    Intent,
    NotFound,
    Policy,
    StoreError,
)
from harness.store import SqlStore
from harness.store.mutants import MUTANTS, open_mutant
from harness.store.sqlstore import SqlStore as Reference

INTENT = Intent(contract="ticket_triage", input={"ticket": "printer on fire"})


def test_each_mutant_overrides_exactly_one_store_method() -> None:
    for info in MUTANTS.values():
        own = [name for name, value in vars(info.mixin).items()
               if callable(value) and not name.startswith("__")]
        assert len(own) == 1, (info.name, own)
        assert hasattr(Reference, own[0]), (info.name, own[0])


@pytest.fixture
def mutant(request: pytest.FixtureRequest, store_url: str) -> Iterator[SqlStore]:
    options = {"pool_size": 20} if store_url.startswith("postgres") else {}
    store = open_mutant(request.param, store_url, **options)
    yield store
    store.close()


@pytest.mark.parametrize("mutant", ["check-then-insert"], indirect=True)
def test_check_then_insert_answers_a_concurrent_duplicate_with_an_error(
        mutant: SqlStore) -> None:
    barrier = threading.Barrier(4, timeout=10)

    def click(_: int) -> str:
        barrier.wait(timeout=10)
        try:
            return mutant.create_job("alice", "k", INTENT).job.id
        except StoreError:
            return "error"

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(click, range(4)))
    assert "error" in answers


@pytest.mark.parametrize("mutant", ["no-fingerprint"], indirect=True)
def test_no_fingerprint_replays_another_body(mutant: SqlStore) -> None:
    first = mutant.create_job("alice", "k", INTENT)
    other = mutant.create_job("alice", "k", Intent(contract="ticket_triage", input={"x": 1}))
    assert other.job.id == first.job.id and not other.created


@pytest.mark.parametrize("mutant", ["timeout-marks-failed"], indirect=True)
def test_timeout_marks_failed_frees_the_slot(mutant: SqlStore) -> None:
    job = mutant.create_job("alice", "k", INTENT).job
    attempt = mutant.start_attempt("alice", job.id, "p")
    assert mutant.time_out("alice", attempt.id).state is AttemptState.FAILED
    mutant.start_attempt("alice", job.id, "q")


@pytest.mark.parametrize("mutant", ["no-attempt-gate"], indirect=True)
def test_no_attempt_gate_opens_a_second_attempt(mutant: SqlStore) -> None:
    job = mutant.create_job("alice", "k", INTENT).job
    mutant.start_attempt("alice", job.id, "p")
    mutant.start_attempt("alice", job.id, "q")
    with pytest.raises(AttemptInFlight):  # the database's two slots still bound it
        mutant.start_attempt("alice", job.id, "r")


@pytest.mark.parametrize("mutant", ["last-write-wins"], indirect=True)
def test_last_write_wins_overwrites_the_result(mutant: SqlStore) -> None:
    intent = Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    job = mutant.create_job("alice", "k", intent).job
    a = mutant.start_attempt("alice", job.id, "p")
    b = mutant.start_attempt("alice", job.id, "q")
    assert mutant.succeed("alice", b.id, {"from": "b"}).outcome is ClaimOutcome.WON
    assert mutant.succeed("alice", a.id, {"from": "a"}).outcome is ClaimOutcome.WON
    assert mutant.get_job("alice", job.id).result == {"from": "a"}


@pytest.mark.parametrize("mutant", ["cancelled-can-win"], indirect=True)
def test_cancelled_can_win_lets_a_cancelled_attempt_claim(mutant: SqlStore) -> None:
    job = mutant.create_job("alice", "k", INTENT).job
    a = mutant.start_attempt("alice", job.id, "p")
    mutant.cancel("alice", a.id, "operator")
    assert mutant.succeed("alice", a.id, {"late": True}).outcome is ClaimOutcome.WON
    assert mutant.get_job("alice", job.id).completed_by == a.id


@pytest.mark.parametrize("mutant", ["owner-leak"], indirect=True)
def test_owner_leak_shows_another_owners_job(mutant: SqlStore) -> None:
    job = mutant.create_job("alice", "k", INTENT).job
    assert mutant.get_job("bob", job.id).id == job.id
    with pytest.raises(NotFound):
        mutant.get_job("bob", "job_missing")


def test_an_unknown_mutant_names_the_real_ones() -> None:
    from harness.domain import UnsupportedTarget

    with pytest.raises(UnsupportedTarget, match="check-then-insert"):
        open_mutant("nope", "sqlite:///x.db")
