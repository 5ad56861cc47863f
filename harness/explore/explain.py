"""The plain-text explanation of a race: the promise, the minimal steps, who won, what was lost.

Pure: reads an outcome (plan, schedule, history, checks) and returns text.
"""

from __future__ import annotations

from typing import Any

from harness.domain.words import counted
from harness.explore.choices import client_of
from harness.explore.controller import ScheduleRun
from harness.explore.plan import OpSpec
from harness.scenarios.history import Pair, pairs
from harness.scenarios.render import format_pair


def _ops(title: str, ops: tuple[OpSpec, ...]) -> list[str]:
    if not ops:
        return [f"  {title}: none"]
    return [f"  {title}:"] + [f"     {op.process:<12} {op.describe()}" for op in ops]


def schedule_lines(outcome: ScheduleRun) -> list[str]:
    """The race as numbered steps: who, in which operation, which statement; timers between."""
    lines = []
    n = 0
    for entry in outcome.schedule:
        label = str(entry["event"])
        if entry.get("kind") == "timer":
            lines.append(f"     --  {label[len('timer '):]} (virtual time jumps)")
            continue
        n += 1
        client = client_of(label)
        statement = label[len(client) + 2:]
        waited = ("   (BUSY: waits for the writer, retried as a new step)"
                  if entry.get("waited") else "")
        lines.append(f"    {n:>3}  {client:<12} {entry.get('op', ''):<22} {statement}{waited}")
    return lines


def _sentence(pair: Pair) -> str | None:
    """What one operation came to, in words (None for the unremarkable)."""
    who, f, asked, value = pair.invoke.process, pair.invoke.f, pair.invoke.value, pair.value
    if pair.type == "info":
        return f"{who}'s {f} got no answer"
    if pair.type == "fail":
        blocking = f", blocked by {value['blocking']}" if value.get("blocking") else ""
        subject = asked.get("attempt") or asked.get("key") or asked.get("job")
        return (f"{who}'s {f} {subject} was refused: {value.get('status')} "
                f"{value.get('error')}{blocking}")
    if f == "create":
        how = "created" if value.get("created") else "was handed the existing"
        return f"{who} {how} job {value.get('job')} (key {asked.get('key')!r}, as {asked['owner']})"
    if f == "succeeded":
        digest = str(asked.get("result_sha256", ""))[:12]
        if value.get("outcome") == "won":
            return f"{asked['attempt']}'s result ({digest}…) won the job"
        return f"{asked['attempt']}'s result ({digest}…) lost: discarded and recorded as a race"
    if f in ("timed_out", "cancelled", "failed"):
        return f"{asked['attempt']} is now {value.get('state')} ({f})"
    if f == "start":
        return f"{value.get('attempt')} started on job {asked.get('job')}"
    if f == "read" and value.get("completed_by"):
        digest = str(value.get("result_sha256", ""))[:12]
        return (f"{who} read job {value.get('job')}: {value.get('status')}, completed by "
                f"{value.get('completed_by')}, result {digest}…")
    return None


def story(outcome: ScheduleRun) -> list[str]:
    """Who won, what was lost: one line per operation that decided something."""
    found = [_sentence(p) for p in pairs(outcome.history)]
    return [f"  - {line}" for line in found if line]


def explanation(
    outcome: ScheduleRun,
    *,
    target: str,
    found: dict[str, Any],
    shrink: dict[str, Any] | None,
    replay: str | None,
) -> str:
    plan = outcome.plan
    lines: list[str] = []
    all_pairs = pairs(outcome.history)
    for check in outcome.checks:
        if check.verdict != "broken":
            continue
        lines.append(f"The promise ({check.checker}): {check.promise}")
        for violation in check.violations:
            lines.append(f"  BROKEN: {violation.message}")
            wanted = set(violation.ops)
            lines.extend(f"      {format_pair(p)}" for p in all_pairs
                         if wanted.intersection(p.indices))
        lines.append("")
    how = (f"explore --workload {found.get('workload')} --seed {found.get('seed')}, schedule "
           f"#{found.get('schedule')} ({found.get('choices', 'seeded')} choices, after "
           f"{found.get('schedules')} schedules)")
    lines.append(f"Found by: {how}, on {target}")
    if shrink:
        lines.append(f"Shrunk: {shrink['original_steps']} → {outcome.steps} steps, "
                     f"{shrink['original_ops']} → {plan.size()} operations "
                     f"({shrink['plan_runs']} + {shrink['hypothesis_runs']} runs)")
    lines.append("")
    if outcome.schedule or replay:
        each = ("one storage step each: a command, a pipeline or transaction, or a statement, "
                "held at the proxy until granted" if "commands" in outcome.meta
                else "one SQL statement each")
        lines.append(f"The schedule: {outcome.steps} steps ({each}), {outcome.timers} timers")
        if outcome.meta.get("settles_expired"):
            lines.append(f"  NOTE: {counted(outcome.meta['settles_expired'], 'settle')} expired "
                         "(a request "
                         "was still moving when explore chose): those points are "
                         "nondeterministic")
    else:
        lines.append("Free-running threads (--stress): no schedule was recorded")
    lines.extend(_ops("setup (one after another, before the race)", plan.setup))
    if outcome.schedule:
        lines.append("  race (the interleaving explore chose; step, client, operation, "
                     "statement):")
        lines.extend(schedule_lines(outcome))
    lines.extend(_ops("epilogue (one after another, after the race)", plan.epilogue))
    lines.append("")
    lines.append("Who won, what was lost:")
    lines.extend(story(outcome) or ["  (nothing was decided)"])
    lines.append("")
    if replay:
        lines.append(f"Replay it exactly: {replay}")
    return "\n".join(lines) + "\n"
