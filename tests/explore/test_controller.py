"""The controller on real SQLite and PostgreSQL: statement steps, lock waits, one waiter at a
time, determinism, and recovery after an aborted schedule."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from harness.explore.choices import GuidedChoices, SwarmChoices, client_of
from harness.explore.controller import Controller, ScheduleRun
from harness.explore.plan import OpSpec, Plan, RandomDraw
from harness.explore.workloads import CLAIM_CHECKERS, HEDGED, RESULT_A, RESULT_B, build_plan
from harness.scenarios.scheduler import Divergence, RecordedChoices
from tests.explore.conftest import Open


def claim_race() -> Plan:
    """Two attempts of one hedged job claim at once; reads after."""
    setup = (OpSpec("create", "alice", key="c1", intent="hedged", save="job"),
             OpSpec("start", "worker:A", job="job", provider="primary", save="A"),
             OpSpec("start", "worker:B", job="job", provider="fallback", save="B"))
    clients = {"provider:A": (OpSpec("succeeded", "provider:A", attempt="A", result=RESULT_A),),
               "provider:B": (OpSpec("succeeded", "provider:B", attempt="B", result=RESULT_B),)}
    epilogue = (OpSpec("read", "alice", job="job"), OpSpec("races", "alice", job="job"))
    return Plan("claims", {"hedged": HEDGED}, setup, clients, (), epilogue, CLAIM_CHECKERS)


def two_tabs() -> Plan:
    clients = {f"tab{n}": (OpSpec("create", f"tab{n}", key="k1", intent="ask", save="job"),)
               for n in (1, 2)}
    return Plan("double-click", {"ask": HEDGED}, (), clients, (), (),
                ("one_job_per_intent", "duplicates_get_same_job"))


A_FIRST = ["provider:A: attempt_by_id", "provider:A: claim_result",
           "provider:B: attempt_by_id", "provider:B: claim_result"]
# PostgreSQL claims in one statement (claim.sql), the statement production runs: a step of its
# own, so two claims overlap only when the COMMIT is a step too (--commit-steps).
A_FIRST_PG = ["provider:A: claim", "provider:B: claim"]


def claim_controller(open_controller: Open, db_url: str) -> tuple[Controller, list[str]]:
    """A controller on which B's claim can wait for A's, and the labels that make it wait."""
    if db_url.startswith("sqlite"):
        return open_controller(), A_FIRST
    return open_controller(commit_steps=True), A_FIRST_PG


def _completion(outcome: ScheduleRun, process: str, f: str) -> dict[str, object]:
    for op in outcome.history:
        if op.process == process and op.f == f and op.type != "invoke":
            return op.value
    raise AssertionError(f"no {f} completion for {process}")


def test_a_step_is_one_statement_of_the_store(open_controller: Open) -> None:
    controller = open_controller()
    outcome = controller.run(two_tabs(), GuidedChoices([]))
    labels = [str(e["event"]) for e in outcome.schedule]
    # The first create inserts; the second's insert-or-conflict finds it, then reads it back.
    assert labels == ["tab1: insert_job", "tab2: insert_job", "tab2: job_by_key"]
    assert outcome.steps == 3 and outcome.status == "held"
    assert outcome.schedule[0]["enabled"] == ["tab1: insert_job", "tab2: insert_job"]


def test_transactions_overlap_and_a_waiting_step_lets_only_its_holder_run(
        open_controller: Open, db_url: str) -> None:
    controller, first = claim_controller(open_controller, db_url)
    outcome = controller.run(claim_race(), GuidedChoices(first))
    waited = [e for e in outcome.schedule if e.get("waited")]
    assert len(waited) == 1 and client_of(str(waited[0]["event"])) == "provider:B"
    # SQLite: B's BEGIN IMMEDIATE is BUSY (A holds the write lock); PostgreSQL: B's claim
    # waits inside the server on the job row A's uncommitted claim locked.
    expected = "provider:B: attempt_by_id" if db_url.startswith("sqlite") \
        else "provider:B: claim"
    assert waited[0]["event"] == expected
    after = outcome.schedule[int(waited[0]["n"]) + 1:]
    holder_turn = []
    for entry in after:
        if client_of(str(entry["event"])) == "provider:B":
            break
        holder_turn.append(entry)
        assert all(client_of(label) == "provider:A" for label in entry.get("enabled", []))
    assert holder_turn, "the holder must run while B waits"
    assert _completion(outcome, "provider:A", "succeeded")["outcome"] == "won"
    assert _completion(outcome, "provider:B", "succeeded")["outcome"] == "lost"
    assert outcome.status == "held", [c for c in outcome.checks if c.verdict != "held"]


class _CountingController(Controller):
    """Records the most steps ever waiting at once."""

    most_waiting = 0

    def _enabled(self, workers):  # type: ignore[no-untyped-def]
        waiting = set(self.waiting) | {w for w in workers if w.busy and any(
            x.holds_write for x in workers if x is not w)}
        self.most_waiting = max(self.most_waiting, len(waiting))
        return super()._enabled(workers)


@pytest.mark.parametrize("workload", ["claims", "timeouts"])
def test_at_most_one_step_waits_on_a_lock_at_a_time(db_url: str, workload: str) -> None:
    from harness.explore.target import explore_store

    with explore_store(db_url) as (store, _), _CountingController(store) as controller:
        waits = 0
        for n in range(40):
            rng = random.Random(f"waits:{n}")
            plan = build_plan(workload, RandomDraw(rng), 4)
            waits += controller.run(plan, SwarmChoices(rng, plan)).waits
        assert waits > 0, "the workload must make steps wait, or this proves nothing"
        assert controller.most_waiting == 1


@pytest.mark.parametrize("workload", ["double-click", "mismatch", "claims", "timeouts"])
def test_the_same_seed_gives_the_same_bytes_three_times(open_controller: Open,
                                                        workload: str) -> None:
    controller = open_controller()
    for n in range(8):
        runs = set()
        for _ in range(3):
            rng = random.Random(f"same:{n}")
            plan = build_plan(workload, RandomDraw(rng), 4)
            outcome = controller.run(plan, SwarmChoices(rng, plan))
            runs.add(("\n".join(outcome.history_lines()), repr(outcome.schedule)))
        assert len(runs) == 1, f"schedule {n} of {workload} ran differently"


class _StopAt:
    """Follows ``first``, and fails on the ``event``-th event: B waits for A's lock by then."""

    def __init__(self, event: int, controller: Controller, first: list[str]) -> None:
        self.controller = controller
        self.guide = GuidedChoices(first)
        self.seen = 0
        self.event = event

    def choose(self, enabled: Sequence[str]) -> int:
        return self.guide.choose(enabled)

    def observe(self, label: str) -> None:
        self.seen += 1
        if self.seen == self.event:
            workers = self.controller.workers
            assert self.controller.waiting or any(w.busy for w in workers), "B must wait"
            raise RuntimeError("stop here")
        self.guide.observe(label)


def test_an_aborted_schedule_rolls_back_and_the_next_one_runs(open_controller: Open,
                                                              db_url: str) -> None:
    controller, first = claim_controller(open_controller, db_url)
    # B is waiting when it stops: the fifth event on SQLite (four steps and B's BUSY), the
    # third on PostgreSQL (A's claim, B's claim waiting on A's lock, A's commit).
    event = 5 if db_url.startswith("sqlite") else 3
    with pytest.raises(RuntimeError, match="stop here"):
        controller.run(claim_race(), _StopAt(event, controller, first))
    with pytest.raises(Divergence, match="not enabled"):
        controller.run(claim_race(), RecordedChoices(["provider:C: nothing"]))
    outcome = controller.run(claim_race(), GuidedChoices(first))
    assert outcome.status == "held"
    assert _completion(outcome, "provider:A", "succeeded")["outcome"] == "won"


def test_the_controller_sees_races_the_mutants_make(open_controller: Open) -> None:
    controller = open_controller("check-then-insert")
    order = ["tab1: job_by_key", "tab2: job_by_key", "tab1: insert jobs", "tab2: insert jobs"]
    outcome = controller.run(two_tabs(), GuidedChoices(order))
    assert [e["event"] for e in outcome.schedule] == order
    assert outcome.broken == ["duplicates_get_same_job"]
    assert _completion(outcome, "tab2", "create")["status"] == 503


def test_commit_steps_let_an_insert_wait_on_an_uncommitted_twin(db_url: str) -> None:
    from harness.explore.target import explore_store

    with explore_store(db_url) as (store, _), Controller(store, commit_steps=True) as controller:
        outcome = controller.run(two_tabs(), GuidedChoices(["tab1: insert_job",
                                                            "tab2: insert_job"]))
    events = [str(e["event"]) for e in outcome.schedule]
    assert events[:3] == ["tab1: insert_job", "tab2: insert_job", "tab1: commit"]
    # tab1's row is written, not committed: tab2's insert waits for it (PostgreSQL: on tab1's
    # transaction; SQLite: BUSY on the write lock), and only tab1 may move meanwhile.
    assert outcome.schedule[1].get("waited") is True
    assert "enabled" not in outcome.schedule[2]
    assert events.count("tab2: insert_job") == (2 if db_url.startswith("sqlite") else 1)
    assert outcome.status == "held"
    assert _completion(outcome, "tab2", "create")["created"] is False
