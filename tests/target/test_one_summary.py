"""One summary grouped by promise (issue 30 item 5): a promise broken by a scenario and by a
drill of the same run is one line naming both places; a drill-only report keeps its own lines."""

from __future__ import annotations

from harness.drill.events import DrillRun, PromiseRate
from harness.reports.model import Results
from harness.reports.summary import summary_lines, to_act_on
from harness.scenarios.events import Check, ScenarioRun, Violation

SCENARIO = ScenarioRun(
    scenario="double_click", target="http://svc", verdict="broken", outcome="fail",
    checks=(Check("one_job_per_intent", "one job per intent", "broken",
                  (Violation("two jobs for one click"),)),),
    replay_command="failover-harness replay runs/x")
DRILL = DrillRun(
    drill="double-click", target="http://svc", verdict="fail", outcome="fail",
    promises=(PromiseRate("one_job_per_intent", "one job per intent", held=3, broken=2,
                          text="broken in 2 of 5 intents", example="two jobs"),),
    command="failover-harness drill --drills double-click")


def results(*events: object) -> Results:
    return Results(command="check", verdict="fail", exit_code=1, started_at="t0",
                   finished_at="t1", harness_version="0", events=events)  # type: ignore[arg-type]


def test_a_promise_broken_by_both_halves_is_one_line() -> None:
    act = to_act_on(results(SCENARIO, DRILL))
    assert [b.name for b in act.broken] == ["one_job_per_intent"]
    assert [p.short for p in act.broken[0].places] == ["double_click 1/1", "drill double-click 2/5"]
    assert not act.others  # the drill's failure is not said twice
    lines = list(summary_lines(results(SCENARIO, DRILL)))
    assert sum("one_job_per_intent:" in line for line in lines) == 1


def test_a_drill_alone_keeps_its_own_lines() -> None:
    act = to_act_on(results(DRILL))
    assert not act.broken and [p.where for p in act.others] == ["drill double-click on http://svc"]
