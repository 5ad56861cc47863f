"""The discrete-event scheduler: virtual time, per-process order, and the choice seam."""

from __future__ import annotations

import pytest

from harness.domain.clock import EPOCH, ManualClock
from harness.scenarios.scheduler import (
    Divergence,
    RecordedChoices,
    Scheduler,
    SeededChoices,
    decisions_of,
)


def _scheduler(choices: object) -> tuple[Scheduler, list[str]]:
    ran: list[str] = []
    scheduler = Scheduler(clock=ManualClock(EPOCH), choices=choices)  # type: ignore[arg-type]
    return scheduler, ran


def test_the_clock_jumps_to_each_event_in_time_order() -> None:
    scheduler, _ = _scheduler(SeededChoices(0))
    seen = []
    for t, name in [(30.0, "late"), (0.0, "first"), (5.0, "middle")]:
        scheduler.at(t, name, name, lambda n=name: seen.append((n, scheduler.clock.now())))
    scheduler.run()
    assert [n for n, _ in seen] == ["first", "middle", "late"]
    assert [(w - EPOCH).total_seconds() for _, w in seen] == [0, 5, 30]
    assert scheduler.now == 30


def test_a_process_is_sequential_and_needs_wait_for_their_names() -> None:
    scheduler, ran = _scheduler(SeededChoices(1))
    scheduler.at(0, "bob", "read job", lambda: ran.append("read"), needs=["job"])
    scheduler.at(0, "alice", "create job", lambda: (ran.append("create"),
                                                     scheduler.settle("job")))
    scheduler.at(0, "alice", "second", lambda: ran.append("second"))
    scheduler.run()
    assert ran.index("create") < ran.index("read")
    assert ran.index("create") < ran.index("second")


def test_events_created_while_running_are_scheduled_too() -> None:
    scheduler, ran = _scheduler(SeededChoices(0))
    scheduler.at(0, "w", "start", lambda: scheduler.at(
        scheduler.now + 30, "w", "reply", lambda: ran.append(f"reply@{scheduler.now:g}")))
    scheduler.run()
    assert ran == ["reply@30"]


def _tie_order(seed: int) -> list[str]:
    scheduler, ran = _scheduler(SeededChoices(seed))
    for name in "abcdef":
        scheduler.at(1, name, "go", lambda n=name: ran.append(n))
    scheduler.run()
    return ran


def test_ties_are_broken_by_the_seed_the_same_way_every_time() -> None:
    orders = {seed: _tie_order(seed) for seed in range(8)}
    assert all(_tie_order(seed) == order for seed, order in orders.items())
    assert len({tuple(o) for o in orders.values()}) > 1


def test_a_recorded_schedule_replays_its_choices() -> None:
    scheduler, ran = _scheduler(SeededChoices(5))
    for name in "abc":
        scheduler.at(0, name, "go", lambda n=name: ran.append(n))
    scheduler.run()
    replayed, again = _scheduler(RecordedChoices(decisions_of(scheduler.schedule)))
    for name in "abc":
        replayed.at(0, name, "go", lambda n=name: again.append(n))
    replayed.run()
    assert again == ran
    assert [e["event"] for e in replayed.schedule] == [e["event"] for e in scheduler.schedule]


def test_a_recorded_choice_that_is_not_enabled_is_a_divergence() -> None:
    scheduler, _ = _scheduler(RecordedChoices(["0.000 zed go"]))
    scheduler.at(0, "a", "go", lambda: None)
    scheduler.at(0, "b", "go", lambda: None)
    with pytest.raises(Divergence, match=r"'0\.000 zed go' is not enabled"):
        scheduler.run()


def test_a_crashed_process_loses_its_pending_events() -> None:
    scheduler, ran = _scheduler(SeededChoices(0))
    scheduler.at(30, "worker:A", "reply A", lambda: ran.append("reply"))
    scheduler.at(10, "worker:A", "timeout A", lambda: ran.append("timeout"))
    scheduler.at(3, "nemesis", "crash A", lambda: scheduler.cancel_process("worker:A"))
    scheduler.run()
    assert ran == []
