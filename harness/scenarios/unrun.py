"""Steps of a scenario named for people: what each does, where it is in the file, and the
expected replies of steps that ran but never came."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from harness.scenarios.model import Cancel, Crash, Create, Fault, RunAttempt, Scenario, Step


def describe(step: Step) -> tuple[str, str]:
    """The process a step runs as, and what it does in a few words."""
    action = step.action
    if isinstance(action, Create):
        return step.actor, f"create {step.save or action.key}"
    if isinstance(action, RunAttempt):
        return f"worker:{action.name}", f"start {action.name}"
    if isinstance(action, Crash):
        return "nemesis", f"crash {action.attempt}"
    if isinstance(action, Cancel):
        return step.actor, f"cancel {action.attempt}"
    if isinstance(action, Fault):
        return "nemesis", f"fault {action.kind}"
    return step.actor, f"{step.kind} {step.names_used()[0]}"


def where(step: Step) -> str:
    """``step 3 (line 12, create k)``."""
    line = f"line {step.line}, " if step.line else ""
    return f"step {step.index + 1} ({line}{describe(step)[1]})"


def missing_replies(scenario: Scenario, unrun: list[dict[str, Any]],
                    replied: Collection[tuple[int, str | None]],
                    stopped: Mapping[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Expected replies of steps that ran (not in ``unrun``) but never came (not in
    ``replied``): a worker that stopped early (``stopped``: its name → why and the fix)."""
    out: list[dict[str, Any]] = []
    not_run = {u["step"] for u in unrun}
    for step in scenario.steps:
        if not step.expect or step.index + 1 in not_run:
            continue
        attempt = step.action if isinstance(step.action, RunAttempt) else None
        keys: list[str | None] = list(step.expect) if attempt is not None else [None]
        why, fix = stopped.get(attempt.name if attempt is not None else "",
                               ("it never happened", "see the history"))
        for key in keys:
            if (step.index, key) in replied:
                continue
            what = f"its {key} reply" if key else "its answer"
            out.append({"step": step.index + 1, "line": step.line, "kind": step.kind,
                        "why": f"{where(step)}: {what} was expected but never came: {why}",
                        "fix": fix})
    return out
