"""Plans and choice sources as data: round trips, damage reported by field, shrinking units."""

from __future__ import annotations

import random

import pytest

import harness.explore
from harness.domain.errors import ConfigError
from harness.explore.choices import (
    GuidedChoices,
    PrefixChoices,
    SwarmChoices,
    client_of,
    next_prefix,
)
from harness.explore.plan import OpSpec, Plan, RandomDraw, SmallestDraw
from harness.explore.workloads import WORKLOADS, build_plan


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_a_plan_survives_its_json(workload: str) -> None:
    for n in range(20):
        plan = build_plan(workload, RandomDraw(random.Random(n)), 4)
        assert Plan.from_json(plan.to_json()) == plan
        assert build_plan(workload, RandomDraw(random.Random(n)), 4) == plan


def test_the_smallest_plans_are_small() -> None:
    plan = build_plan("double-click", SmallestDraw(), 5)
    assert sorted(plan.clients) == ["tab1", "tab2"]
    assert all(len(ops) == 1 for ops in plan.clients.values())
    assert build_plan("all", SmallestDraw(), 3).workload == "double-click"


def test_keeping_drops_ops_and_empty_clients_and_timers() -> None:
    plan = build_plan("claims", RandomDraw(random.Random(3)), 4)
    units = plan.units()
    assert len(units) == plan.size()
    without_timers = plan.keeping({u for u in units if u[0] != "timers"})
    assert without_timers.timers == () and without_timers.setup == plan.setup
    assert plan.keeping(set()).size() == 0
    assert plan.keeping(set(units)) == plan


@pytest.mark.parametrize(("damage", "field"), [
    ({"setup": [{"f": "explode", "process": "x"}]}, "plan.setup.0"),
    ({"setup": [{"f": "read", "process": "x", "colour": "red"}]}, "plan.setup.0"),
    ({"checkers": ["no_such_checker"]}, "plan.checkers"),
    ({"intents": {"ask": {"contract": "c"}}}, "plan.intents.ask"),
    ({"clients": {"tab1": [{"f": "create", "process": "tab1", "intent": "nope"}]}},
     "plan.intents"),
])
def test_a_damaged_plan_names_the_field(damage: dict[str, object], field: str) -> None:
    data = {**build_plan("double-click", SmallestDraw(), 2).to_json(), **damage}
    with pytest.raises(ConfigError) as error:
        Plan.from_json(data)
    assert error.value.field == field and error.value.fix


def test_swarm_choices_are_the_seeds() -> None:
    plan = build_plan("claims", SmallestDraw(), 3)
    options = ["provider:A: claim_result", "provider:B: attempt_by_id", "timer @1s reply B"]
    runs = [[SwarmChoices(random.Random(7), plan).choose(options) for _ in range(30)]
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert client_of(options[0]) == "provider:A" and client_of(options[2]) == "timer"


def test_guided_choices_follow_the_recorded_order_where_they_can() -> None:
    guide = GuidedChoices(["b: x", "a: y", "a: x"])
    assert guide.choose(["a: x", "b: x"]) == 1
    guide.observe("b: x")
    assert guide.choose(["a: x", "c: z"]) == 0  # "a: y" is not enabled: the next one that is
    guide.observe("c: z")  # never recorded: nothing is consumed
    assert guide.left == ["a: y", "a: x"]


def test_next_prefix_walks_depth_first() -> None:
    choices = PrefixChoices()
    for width in (2, 3, 2):
        choices.choose([str(i) for i in range(width)])
    assert choices.trail == [(0, 2), (0, 3), (0, 2)]
    assert next_prefix(choices.trail) == [0, 0, 1]
    assert next_prefix([(0, 2), (2, 3), (1, 2)]) == [1]
    assert next_prefix([(1, 2), (2, 3)]) is None


def test_the_public_surface() -> None:
    for name in harness.explore.__all__:
        assert getattr(harness.explore, name) is not None
    assert OpSpec("read", "alice", job="job").describe() == "read job"
