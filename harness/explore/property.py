"""Explore inside your own Hypothesis tests: one schedule per example, shrunk by Hypothesis.

::

    from hypothesis import given, settings, strategies as st
    from harness.explore import Controller, explore_schedule

    CONTROLLER = Controller(my_store)          # reused by every example

    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def test_no_race(data):
        explore_schedule(data, CONTROLLER, workload="double-click")

A broken promise raises :class:`RaceFound` (an ``AssertionError``) whose message is the
explanation: the promise, the minimal steps, who won and what was lost. The plan and every
decision are ``data.draw`` calls, so Hypothesis shrinks the failure to the fewest decisions and
``@reproduce_failure`` replays it.
"""

from __future__ import annotations

from typing import Any

from harness.explore.choices import HypothesisChoices, HypothesisDraw
from harness.explore.controller import Controller, ScheduleRun
from harness.explore.explain import explanation
from harness.explore.workloads import build_plan


class RaceFound(AssertionError):
    """A schedule broke a promise; the message explains it."""

    def __init__(self, outcome: ScheduleRun) -> None:
        text = explanation(outcome, target=outcome.meta.get("target", "the store"),
                           found={"workload": outcome.plan.workload, "choices": "hypothesis"},
                           shrink=None, replay=None)
        super().__init__(text)
        self.outcome = outcome


def explore_schedule(data: Any, controller: Controller, *, workload: str = "all",
                     clients: int = 3) -> ScheduleRun:
    """Draw a plan and its interleaving from ``data``, run it, raise :class:`RaceFound` if a
    promise breaks; return the outcome otherwise."""
    plan = build_plan(workload, HypothesisDraw(data), clients)
    outcome = controller.run(plan, HypothesisChoices(data))
    if outcome.violated:
        raise RaceFound(outcome)
    return outcome
