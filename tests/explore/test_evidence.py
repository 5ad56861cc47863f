"""A search without a violation is evidence only about what its schedules exercised.

Each checker says what it must see to judge (``evidence``) and how much of it a history held
(``seen``). A schedule that saw none of a promise's evidence judged nothing about it, so explore
counts, per promise, the schedules that exercised it: every promise exercised and no schedule
unknown is a pass (exit 0); a promise no schedule exercised, or an unknown schedule, makes the
search unknown (exit 3), saying which promise and why — never "no violation" about nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.cli import main
from harness.explore.controller import ScheduleRun
from harness.explore.emit import explore_result
from harness.explore.evidence import Tally
from harness.explore.plan import Plan
from harness.explore.search import SearchSettings, search
from harness.scenarios.checkers import CheckResult


def _results(folder: Path) -> dict[str, object]:
    return json.loads((folder / "latest" / "results.json").read_text(encoding="utf-8"))


def _checks(folder: Path) -> dict[str, dict[str, object]]:
    event = _results(folder)["events"][0]  # type: ignore[index]
    return {c["name"]: c for c in event["checks"]}


def test_a_promise_no_schedule_exercised_makes_the_search_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the smallest double-click plan has no second owner: owners_isolated is never exercised
    code = main(["explore", "--target", "sqlite", "--workload", "double-click", "--choices",
                 "exhaustive", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "every interleaving of the smallest plan was explored" in out
    assert re.search(r"owners_isolated +exercised in 0 of 2 schedules — NOT EXERCISED", out), out
    assert "not evidence about owners_isolated" in out
    assert "fix: the smallest plans do not exercise it" in out
    checks = _checks(tmp_path)
    assert checks["owners_isolated"]["verdict"] == "unknown"
    assert checks["owners_isolated"]["seen"] == 0
    assert checks["one_job_per_intent"]["verdict"] == "valid"
    assert checks["one_job_per_intent"]["seen"] == 2
    assert _results(tmp_path)["exit_code"] == 3


def test_a_clean_search_counts_the_schedules_that_exercised_each_promise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--target", "sqlite", "--workload", "double-click", "--seed", "1",
                 "--budget", "20", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "evidence: 20 of 20 schedules exercised at least one promise" in out
    checks = _checks(tmp_path)
    assert set(checks) == {"one_job_per_intent", "duplicates_get_same_job", "owners_isolated"}
    for check in checks.values():
        assert check["verdict"] == "valid" and 0 < check["seen"] <= 20, check  # type: ignore[operator]
    # bob sends alice's key in about half the plans: fewer schedules exercise owners_isolated
    assert checks["owners_isolated"]["seen"] < checks["one_job_per_intent"]["seen"]  # type: ignore[operator]


def _check(name: str, verdict: str, seen: int | None, unknowns: Sequence[str] = ()) -> CheckResult:
    return CheckResult(name, f"the promise of {name}", verdict,  # type: ignore[arg-type]
                       unknowns=tuple(unknowns), evidence=f"{name} evidence"
                       if seen is not None else None, seen=seen)


def _outcome(*checks: CheckResult) -> ScheduleRun:
    plan = Plan("double-click", {}, (), {}, (), (), tuple(c.checker for c in checks))
    statuses = {c.verdict for c in checks}
    status = "broken" if "broken" in statuses else "unknown" if "unknown" in statuses \
        else "held"
    return ScheduleRun(plan, [], [], list(checks), status, 3, 0, 0, 0.0)


class _Runner:
    """Hands out the given outcomes, one per schedule."""

    def __init__(self, outcomes: list[ScheduleRun]) -> None:
        self.outcomes = outcomes

    def run(self, plan: Plan, choices: object) -> ScheduleRun:
        return self.outcomes.pop(0)


def _searched(outcomes: list[ScheduleRun]) -> tuple[Tally, str]:
    n = len(outcomes)
    found = search(_Runner(outcomes), SearchSettings(workload="double-click", budget=n, seed=1))
    assert found.outcome is None
    event = explore_result(None, target="t", settings=SearchSettings(), found=found)
    return found.progress.tally, event.verdict


def test_schedules_that_exercised_nothing_are_not_evidence() -> None:
    nothing = [_outcome(_check("one_job_per_intent", "held", 0),
                        _check("in_progress_within_lease", "held", None)) for _ in range(3)]
    tally, verdict = _searched(nothing)
    assert tally.idle == 3 and tally.unexercised() == ["one_job_per_intent"]
    assert verdict == "unknown"
    # a checker that judges whatever the history shows counts as exercised, but does not make a
    # schedule evidence on its own
    assert tally.exercised["in_progress_within_lease"] == 3


def test_an_unknown_schedule_is_not_clean_even_when_every_promise_was_exercised() -> None:
    seen = _outcome(_check("one_job_per_intent", "held", 2))
    hidden = _outcome(_check("one_job_per_intent", "unknown", 1, ["op 3 got no answer"]))
    tally, verdict = _searched([seen, hidden, seen])
    assert tally.unknown == 1 and tally.unknown_in["one_job_per_intent"] == 1
    assert verdict == "unknown"
    assert "unknown in 1: op 3 got no answer" in "\n".join(tally.lines())
    tally, verdict = _searched([seen, seen])
    assert tally.clean and verdict == "pass"
