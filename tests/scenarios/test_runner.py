"""The runner: real concurrency, virtual time, faults, capabilities, byte-identical histories."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.domain.clock import EPOCH, ManualClock
from harness.scenarios.model import Scenario
from harness.scenarios.runfolder import write_run
from harness.scenarios.runner import run_scenario
from harness.scenarios.scheduler import RecordedChoices, decisions_of
from harness.scenarios.targets.base import Reply, Target, TargetSession
from harness.scenarios.targets.stores import STORE_CAPABILITIES
from tests.scenarios.conftest import Opener


class _BarrierSession:
    """Answers every create only once all ``n`` creates are in flight at the same moment."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n, timeout=10)
        self.threads: set[str] = set()

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        self.threads.add(threading.current_thread().name)
        self.barrier.wait(timeout=10)  # a sequential runner would break the barrier here
        return Reply(200, {"id": "job-1", "status": "pending", "version": 1})

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected call {name}")


class _BarrierTarget(Target):
    kind = "sqlite"
    capabilities = STORE_CAPABILITIES

    def __init__(self, n: int) -> None:
        self.session_ = _BarrierSession(n)

    @property
    def description(self) -> str:
        return "barrier"

    @contextmanager
    def session(self, clock: ManualClock, run_id: str,
                concurrency: int) -> Iterator[TargetSession]:
        yield self.session_  # type: ignore[misc]


def test_a_concurrent_group_really_runs_at_once(shipped: dict[str, Scenario]) -> None:
    scenario = shipped["double_click"]
    group = scenario.steps[0].concurrent
    only_group = Scenario(**{**{f: getattr(scenario, f) for f in scenario.__dataclass_fields__},
                             "steps": scenario.steps[:1]})
    target = _BarrierTarget(group)
    result = run_scenario(only_group, target)
    assert len(target.session_.threads) == group
    creates = [op for op in result.history if op.f == "create"]
    assert [op.type for op in creates] == ["invoke"] * group + ["ok"] * group
    assert {op.process for op in creates} == {f"alice/{i}" for i in range(1, group + 1)}


def test_a_30_second_reply_costs_no_real_time(
        open_targets: Opener, shipped: dict[str, Scenario]
) -> None:
    result = run_scenario(shipped["out_of_order_completion"], open_targets("sqlite"))
    assert result.status == "held"
    assert result.virtual_seconds == 35
    late = next(op for op in result.history
                if op.f == "succeeded" and op.value.get("attempt") == "A" and op.type == "ok")
    assert late.time == 30 and late.wall == "2026-01-01T00:00:30.000000Z"
    assert (EPOCH.isoformat()[:10]) == "2026-01-01"


def test_a_crash_drops_the_workers_timeout_and_reply(
        open_targets: Opener, shipped: dict[str, Scenario]
) -> None:
    result = run_scenario(shipped["crash_mid_attempt"], open_targets("sqlite"))
    assert result.status == "held"
    crash = [op for op in result.history if op.process == "nemesis"]
    assert [op.type for op in crash] == ["invoke", "info"]
    assert sorted(crash[1].value["dropped"]) == ["reply A", "timeout A"]
    assert not [op for op in result.history if op.process == "worker:A"
                and op.f in ("succeeded", "timed_out")]


def test_a_missing_capability_is_not_applicable_never_passed(
        open_targets: Opener, shipped: dict[str, Scenario]) -> None:
    result = run_scenario(shipped["triple_click_across_replicas"], open_targets("sqlite"))
    assert result.status == "not_applicable"
    assert result.reason == "needs replicas, which sqlite targets lack"
    assert result.history == [] and result.checks == []


def _history_bytes(scenario: Scenario, target: Target, seed: int, tmp: Path) -> bytes:
    result = run_scenario(scenario, target, seed=seed)
    assert result.status in ("held", "not_applicable"), result.checks
    if result.status == "not_applicable":
        return b""
    folder = write_run(result, tmp)
    return (folder / "history.jsonl").read_bytes() + (folder / "schedule.jsonl").read_bytes()


def test_the_same_seed_writes_byte_identical_histories(
        open_targets: Opener, shipped: dict[str, Scenario], store_url: str,
        tmp_path: Path) -> None:
    target = open_targets(store_url)
    try:
        for scenario in shipped.values():
            first = _history_bytes(scenario, target, 3, tmp_path / "a")
            second = _history_bytes(scenario, target, 3, tmp_path / "b")
            assert first == second, scenario.name
    finally:
        target.close()


def test_seeds_choose_between_simultaneous_events(
        open_targets: Opener, shipped: dict[str, Scenario]
) -> None:
    scenario = shipped["same_key_other_owner"]
    target = open_targets("sqlite")
    schedules = {}
    for seed in range(6):
        result = run_scenario(scenario, target, seed=seed)
        assert result.status == "held"
        schedules[seed] = [e["event"] for e in result.schedule]
    assert len({tuple(s) for s in schedules.values()}) > 1
    decided = run_scenario(scenario, target, seed=4)
    replayed = run_scenario(scenario, target, seed=99,
                            choices=RecordedChoices(decisions_of(decided.schedule)))
    assert [op.to_line() for op in replayed.history] == [op.to_line() for op in
                                                         decided.history]


def test_runs_on_one_database_do_not_see_each_other(
        open_targets: Opener, shipped: dict[str, Scenario], sqlite_url: str) -> None:
    target = open_targets(sqlite_url)
    try:
        results = [run_scenario(shipped["mismatched_key"], target) for _ in range(3)]
    finally:
        target.close()
    assert [r.status for r in results] == ["held"] * 3
    assert len({r.run_id for r in results}) == 3


def test_a_scenario_file_schedule_is_followed(open_targets: Opener, write_scenario: Any) -> None:
    body = """
name: pinned
actors: [alice, bob]
intents: {x: {contract: c, input: {}}}
steps:
  - {at: 0, as: alice, create: {key: k, intent: x}}
  - {at: 0, as: bob, create: {key: k, intent: x}}
checkers: [owners_isolated]
schedule: ["0.000 bob create k"]
"""
    from harness.scenarios.loader import load_scenario

    scenario = load_scenario(write_scenario("pinned", body))
    result = run_scenario(scenario, open_targets("sqlite"))
    assert [op.process for op in result.history] == ["bob", "bob", "alice", "alice"]


@pytest.mark.parametrize("mutant", ["check-then-insert", "no-fingerprint"])
def test_a_mutant_violation_carries_its_ops(
        open_targets: Opener, shipped: dict[str, Scenario], mutant: str
) -> None:
    name = "double_click" if mutant == "check-then-insert" else "mismatched_key"
    result = run_scenario(shipped[name], open_targets(f"mutant:{mutant}"))
    assert result.status == "broken"
    broken = [c for c in result.checks if c.verdict == "broken"]
    assert broken and all(v.ops for c in broken for v in c.violations)
    indices = {op.index for op in result.history}
    assert all(set(v.ops) <= indices for c in broken for v in c.violations)


def test_the_public_surface_is_exactly_all() -> None:
    import harness.scenarios as engine

    assert engine.__all__ == sorted(engine.__all__, key=lambda n: (not n.isupper(), n))
    assert all(hasattr(engine, name) for name in engine.__all__)
