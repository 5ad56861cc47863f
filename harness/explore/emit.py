"""Explore's outcomes as its event (:mod:`harness.explore.events`): the schedules tried, the
(shrunk) interleaving as steps and as a lane diagram (a lane per client, x = the step), the story
of who won, the repro folder and the replay command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.domain.verdicts import OUTCOME, VERDICT
from harness.explore.choices import client_of
from harness.explore.events import ExploreResult, ScheduleStep
from harness.explore.evidence import MORE_FIX, SMALLEST_FIX, Tally
from harness.explore.explain import story
from harness.scenarios.emit import checks_of
from harness.scenarios.events import Check, Lane, Timeline, TimelineEvent, Unknown

if TYPE_CHECKING:
    from harness.explore.controller import ScheduleRun


def schedule_steps(outcome: ScheduleRun) -> tuple[ScheduleStep, ...]:
    steps = []
    n = 0
    for entry in outcome.schedule:
        label = str(entry["event"])
        if entry.get("kind") == "timer":
            steps.append(ScheduleStep(n, "timer", "", label[len("timer "):], "timer"))
            continue
        n += 1
        client = client_of(label)
        steps.append(ScheduleStep(n, client, str(entry.get("op", "")),
                                  label[len(client) + 2:], "statement",
                                  bool(entry.get("waited"))))
    return tuple(steps)


def lane_diagram(steps: tuple[ScheduleStep, ...]) -> Timeline | None:
    """A lane per client; each statement a mark at its step number (timers on their own lane)."""
    lanes: dict[str, list[TimelineEvent]] = {}
    for step in steps:
        kind = "timer" if step.kind == "timer" else "statement"
        label = f"{step.operation}: {step.statement}" if step.operation else step.statement
        lanes.setdefault(step.client, []).append(TimelineEvent(max(step.n, 0.5), kind, label))
    if not lanes:
        return None
    last = max((s.n for s in steps), default=1)
    return Timeline(float(last + 1), tuple(Lane(c, "", tuple(e)) for c, e in lanes.items()),
                    unit="step")


def explore_result(outcome: ScheduleRun | None, *, target: str, settings: Any, found: Any = None,
                   mode: str = "search", original_steps: int | None = None,
                   repro: Any = None, replay: str | None = None,
                   replayed_identical: bool | None = None, replay_divergence: str | None = None,
                   note: str = "") -> ExploreResult:
    """One explore search (or stress run, or repro replay) as an event."""
    progress = found.progress if found is not None else None
    common: dict[str, Any] = {
        "target": target, "workload": getattr(settings, "workload", ""), "mode": mode,
        "seed": int(getattr(settings, "seed", 0) or 0),
        "choices": str(getattr(settings, "choices", "seeded")),
        "schedules_tried": progress.schedules if progress else 0,
        "steps_tried": progress.steps if progress else 0,
        "exhausted": bool(getattr(found, "exhausted", False)), "stress": mode == "stress",
        "note": note, "wall_s": progress.elapsed_s if progress else 0.0,
    }
    if outcome is None:
        return _clean_result(found, common)
    steps = schedule_steps(outcome)
    return ExploreResult(
        verdict=VERDICT[outcome.status],
        outcome=OUTCOME[outcome.status],
        found_at=getattr(found, "schedule", None),
        checks=checks_of(outcome, outcome.history),
        schedule=steps, original_steps=original_steps, shrunk_steps=outcome.steps,
        timers=outcome.timers, ops=len(outcome.history),
        story=tuple(line.removeprefix("  - ") for line in story(outcome)),
        repro_dir=str(repro) if repro is not None else None, replay_command=replay,
        replayed_identical=replayed_identical, replay_divergence=replay_divergence,
        timeline=lane_diagram(steps), **common,
    )


def _clean_result(found: Any, common: dict[str, Any]) -> ExploreResult:
    """A search without a violation: passed only if no schedule was unknown and every promise
    was exercised by some schedule; else unknown, saying which promise nothing exercised and why
    schedules were unknown. Each promise is a check whose ``seen`` counts the schedules that
    exercised it."""
    tally: Tally = found.progress.tally if found is not None else Tally()
    checks = []
    for name, promise in tally.promises.items():
        exercised, unknown = tally.exercised[name], tally.unknown_in[name]
        unknowns = [Unknown(f"unknown in {count} of {tally.checked[name]} schedules: {reason}")
                    for reason, count in tally.reasons.get(name, {}).items()]
        if not exercised:
            unknowns.append(Unknown(tally.why_unexercised(name), SMALLEST_FIX
                                    if common["choices"] == "exhaustive" else MORE_FIX))
        needs = tally.needs.get(name)
        checks.append(Check(name, promise, "unknown" if unknown or not exercised else "held",
                            unknowns=tuple(unknowns), fixes=tuple(tally.fixes.get(name, ())),
                            needs=f"schedules that saw a {needs}" if needs else "",
                            seen=exercised))
    clean = tally.clean
    return ExploreResult(verdict="pass" if clean else "unknown",
                         outcome="pass" if clean else "unknown", checks=tuple(checks), **common)
