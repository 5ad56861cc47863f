"""The schedule loop on a loaded machine. When nothing may run yet not every client is done, it
waits for a change (``_patient``); a client that finishes meanwhile is such a change: the
schedule ends, it is not stuck (under load a service's last answer can still be on its way after
an expired settle; the holding proxy's loop waited its whole stuck time and called a correct twin
stuck). And a PostgreSQL statement is asked about lock waits only when a lock can be held."""

from __future__ import annotations

import pytest

from harness.explore import controller as controller_module
from harness.explore import through
from harness.explore.controller import Controller
from harness.explore.hold import IDLE, RUNNING, Worker
from harness.explore.loop import ScheduleLoop
from harness.explore.plan import OpSpec, Plan
from harness.explore.target import explore_store
from harness.explore.workloads import HEDGED, JOB_CHECKERS
from tests.explore.conftest import Open


def _through_loop(settle_s: float) -> through.ThroughController:
    """A holding-proxy controller's schedule state, without a service or a proxy."""
    loop = through.ThroughController.__new__(through.ThroughController)
    ScheduleLoop.__init__(loop, "test")
    loop.settle_s, loop.control = settle_s, None
    loop.held, loop.inflight, loop.waiting, loop.due = {}, {}, {}, {}
    return loop


def test_a_request_that_finishes_after_its_settle_expired_ends_the_schedule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(through, "STUCK_S", 20.0)  # bounds a hang only
    loop = _through_loop(settle_s=0.001)
    worker = Worker(0, loop.lock, loop.cv)  # its thread is not started: the test moves it
    worker.client, worker.status = "alice/1", RUNNING  # its answer is on its way
    loop.held, loop.inflight = {worker: []}, {worker: []}
    assert loop._settle() == ["alice/1"]  # the settle expires: the request still moves
    with loop.cv:  # then its answer arrives
        worker.status = IDLE
    assert loop._options([worker], []) == [] and loop._done([worker])
    assert loop._patient([worker], []) is True  # was False after STUCK_S: "stuck"


def test_the_store_controller_is_patient_until_every_client_is_done(
        open_controller: Open) -> None:
    controller = open_controller()
    clients = {"tab1": (OpSpec("create", "tab1", key="k1", intent="ask", save="job"),)}
    plan = Plan("double-click", {"ask": HEDGED}, (), clients, (), (), JOB_CHECKERS)
    assert controller.run(plan, _First()).status == "held"
    workers = controller.workers[:1]
    assert controller._done(workers)
    assert controller._patient(workers, []) is True


class _First:
    def choose(self, enabled: object) -> int:
        return 0


@pytest.mark.postgres
def test_a_statement_no_other_session_can_block_is_never_asked_about(
        pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pg_blocking_pids`` is asked about a running statement only while another worker's
    session has a transaction open: one client alone never is, however long its statements
    take on a loaded machine; two that hold transactions at once still are (their lock waits
    are found: tests/explore/test_controller.py)."""
    # as if every statement outlasted the first wait (a loaded machine)
    monkeypatch.setattr(controller_module, "POLL_S", 0.0)
    with explore_store(pg_dsn) as (store, _), Controller(store) as controller:
        asked: list[object] = []
        probe = controller.sessions.probe
        monkeypatch.setattr(controller.sessions, "probe",
                            lambda running: asked.append(running) or probe(running))
        alone = {"tab1": (OpSpec("create", "tab1", key="k1", intent="ask", save="job"),
                          OpSpec("read", "tab1", job="job"))}
        plan = Plan("double-click", {"ask": HEDGED}, (), alone, (), (), JOB_CHECKERS)
        for _ in range(20):
            assert controller.run(plan, _First()).status == "held"
        assert asked == []
