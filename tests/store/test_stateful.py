"""Random operation sequences against each real backend and the pure model: they must agree."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from harness.domain import EventType, HarnessError, Intent, Policy
from harness.store import SqlStore, open_store, sqlstore
from harness.store.mutants import MUTANTS, open_mutant
from tests.store.model import Model, error_name

OWNERS = ["alice", "bob"]
KEYS = ["k1", "k2", "k3"]
intents = st.builds(
    Intent,
    contract=st.just("c"),
    input=st.fixed_dictionaries({"q": st.sampled_from(["a", "b"])}),
    policy=st.builds(Policy, max_open_attempts=st.sampled_from([1, 2])),
)
results = st.fixed_dictionaries({"answer": st.sampled_from(["x", "y"])})


def outcome_of(call: Callable[[], Any]) -> tuple[Any, str | None]:
    try:
        return call(), None
    except HarnessError as exc:
        return None, error_name(exc)


def make_machine(store: SqlStore) -> type[RuleBasedStateMachine]:
    class StoreAgreesWithModel(RuleBasedStateMachine):
        jobs = Bundle("jobs")
        attempts = Bundle("attempts")

        def __init__(self) -> None:
            super().__init__()
            self.model = Model()
            self.run = uuid.uuid4().hex[:8]  # fresh owners per example: one database serves all

        def owner(self, name: str) -> str:
            return f"{name}-{self.run}"

        @rule(target=jobs, owner=st.sampled_from(OWNERS), key=st.sampled_from(KEYS), intent=intents)
        def create(self, owner: str, key: str, intent: Intent) -> Any:
            o = self.owner(owner)
            expected, expected_err = outcome_of(lambda: self.model.create(o, key, intent))
            actual, actual_err = outcome_of(lambda: store.create_job(o, key, intent))
            assert actual_err == expected_err
            if actual is None:
                return (o, "missing")
            created, job_id = expected
            assert actual.created == created
            if created:
                self.model.register(o, key, actual.job.id, intent)
            else:
                assert actual.job.id == job_id
            return (o, actual.job.id)

        @rule(target=attempts, job=jobs, as_owner=st.sampled_from([None, *OWNERS]))
        def start(self, job: tuple[str, str], as_owner: str | None) -> Any:
            owner = job[0] if as_owner is None else self.owner(as_owner)
            _, expected_err = outcome_of(lambda: self.model.check_start(owner, job[1]))
            actual, actual_err = outcome_of(lambda: store.start_attempt(owner, job[1], "p"))
            assert actual_err == expected_err, (actual_err, expected_err)
            if actual is None:
                return (owner, "missing")
            self.model.register_attempt(owner, job[1], actual.id)
            return (owner, actual.id)

        @rule(
            attempt=attempts,
            event=st.sampled_from(
                [EventType.DISPATCHED, EventType.TIMED_OUT, EventType.FAILED, EventType.CANCELLED]
            ),
        )
        def move(self, attempt: tuple[str, str], event: EventType) -> None:
            owner, attempt_id = attempt
            _, expected_err = outcome_of(lambda: self.model.move(owner, attempt_id, event))
            call = {
                EventType.DISPATCHED: lambda: store.dispatch(owner, attempt_id),
                EventType.TIMED_OUT: lambda: store.time_out(owner, attempt_id),
                EventType.FAILED: lambda: store.fail(owner, attempt_id, {"code": "e"}),
                EventType.CANCELLED: lambda: store.cancel(owner, attempt_id, "r"),
            }[event]
            _, actual_err = outcome_of(call)
            assert actual_err == expected_err

        @rule(attempt=attempts, result=results)
        def succeed(self, attempt: tuple[str, str], result: dict[str, Any]) -> None:
            owner, attempt_id = attempt
            expected, expected_err = outcome_of(
                lambda: self.model.succeed(owner, attempt_id, result)
            )
            actual, actual_err = outcome_of(lambda: store.succeed(owner, attempt_id, result))
            assert actual_err == expected_err
            if actual is not None:
                assert actual.outcome == expected

        @rule(job=consumes(jobs))
        def forget(self, job: tuple[str, str]) -> None:
            """Drop a job from the bundle so later steps reach others."""

        @invariant()
        def same_state(self) -> None:
            for job_id, mjob in self.model.jobs.items():
                job = store.get_job(mjob.owner, job_id)
                assert (job.status, job.version, job.completed_by, job.result,
                        job.fingerprint) == (mjob.status, mjob.version, mjob.completed_by,
                                             mjob.result, mjob.fingerprint)
                got = {a.id: (a.state, a.outcome) for a in store.list_attempts(mjob.owner, job_id)}
                want = {
                    i: (a.state, a.outcome)
                    for i, a in self.model.attempts.items()
                    if a.job_id == job_id
                }
                assert got == want
                races = [
                    (r.attempt_id, r.winner_attempt_id, r.reason, r.payload_sha256)
                    for r in store.list_races(mjob.owner, job_id)
                ]
                assert races == self.model.races[job_id]

    return StoreAgreesWithModel


def run_machine(store: SqlStore, examples: int, *, shrink: bool = True,
                derandomize: bool = False) -> None:
    phases = list(Phase) if shrink else [Phase.generate]
    run_state_machine_as_test(
        make_machine(store),
        settings=settings(
            max_examples=examples,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
            phases=phases,
            derandomize=derandomize,
        ),
    )


def test_store_agrees_with_the_model(store: SqlStore) -> None:
    run_machine(store, 40 if store.backend == "sqlite" else 25)


# check-then-insert only shows under concurrency (tests/store/test_mutants.py races it).
SEQUENTIAL_MUTANTS = sorted(set(MUTANTS) - {"check-then-insert"})


@pytest.mark.parametrize("mutant", SEQUENTIAL_MUTANTS)
def test_the_model_catches_each_mutant(mutant: str, sqlite_url: str) -> None:
    """The oracle is not the store: each store that breaks a rule disagrees with the model."""
    store = open_mutant(mutant, sqlite_url)
    try:
        with pytest.raises(AssertionError):  # the same 200 programs every run: no luck
            run_machine(store, 200, shrink=False, derandomize=True)
    finally:
        store.close()


def test_the_model_catches_a_wrong_race_digest(sqlite_url: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that records a lost payload's digest wrongly (SHA-256 of Python's repr, not of
    the canonical JSON) disagrees with the model's own digest."""
    monkeypatch.setattr(sqlstore, "payload_digest",
                        lambda value: hashlib.sha256(repr(value).encode()).hexdigest())
    store = open_store(sqlite_url)
    try:
        with pytest.raises(AssertionError):
            run_machine(store, 200, shrink=False, derandomize=True)  # no luck
    finally:
        store.close()


@pytest.mark.parametrize("owner", ["alice"])
def test_the_model_itself_catches_a_double_win(owner: str) -> None:
    """The oracle is not vacuous: a second claim on a completed job is lost in the model."""
    model = Model()
    intent = Intent(contract="c", input={}, policy=Policy(max_open_attempts=2))
    model.register(owner, "k", "j", intent)
    model.register_attempt(owner, "j", "a")
    model.register_attempt(owner, "j", "b")
    assert model.succeed(owner, "b", {"v": 1}).value == "won"
    assert model.succeed(owner, "a", {"v": 2}).value == "lost"
    assert model.jobs["j"].result == {"v": 1}
