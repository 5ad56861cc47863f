"""Explore with a target whose replays are unmarked: a 201 is no evidence that a create made the
job, so the history does not claim ``created`` (issue 26; the scenario runner does the same)."""

from __future__ import annotations

from typing import Any, cast

from harness.explore.ops import Executor
from harness.explore.plan import OpSpec, Plan
from harness.scenarios.history import History
from harness.scenarios.targets.base import Reply, TargetSession

JOB = {"id": "j-1", "status": "pending", "idempotency_key": "k"}


def _created(unseen: frozenset[str]) -> dict[str, Any]:
    executor = Executor(cast(Plan, None), cast(TargetSession, None), "t",
                        History(now=lambda: (0.0, "")), unseen=unseen)
    kind, value = executor._value(OpSpec(f="create", process="c1", key="k"),
                                  Reply(status=201, body=JOB))
    assert kind == "ok"
    return value


def test_a_marked_target_records_whether_the_create_made_the_job() -> None:
    assert _created(frozenset())["created"] is True


def test_an_unmarked_target_records_no_created_field() -> None:
    value = _created(frozenset({"created"}))
    assert "created" not in value
    assert value["status"] == "pending"
