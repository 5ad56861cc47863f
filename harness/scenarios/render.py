"""Plain-text rendering of scenario runs for the terminal: verdicts, broken promises, the ops
that show them, and the command that replays them. Pure: returns strings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from harness.domain.verdicts import STATUS_LABEL
from harness.domain.words import counted
from harness.scenarios.history import Op, Pair, pairs, shown_text

if TYPE_CHECKING:  # an annotation: rendering text does not import the runner
    from harness.scenarios.runner import RunResult

LABELS = STATUS_LABEL


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value[:12] + "…" if len(value) == 64 else shown_text(value)
    if isinstance(value, list | dict):
        return json.dumps(_shorten(value), separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value)


def _shorten(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if isinstance(value, str) and len(value) == 64:
        return value[:12] + "…"
    return value


def _fields(value: dict[str, Any], skip: tuple[str, ...] = ()) -> str:
    return " ".join(f"{k}={_short(v)}" for k, v in sorted(value.items())
                    if v is not None and k not in skip)


def format_op(op: Op) -> str:
    """One op as a line: index, virtual time, process, type, function, fields."""
    return (f"#{op.index:<3} t={op.time:<7g} {op.process:<11} {op.type:<6} {op.f:<10} "
            f"{_fields(op.value)}")


def format_pair(pair: Pair) -> str:
    """An invocation and its completion on one line: what was asked → what came back."""
    inv, done = pair.invoke, pair.completion
    asked = _fields(inv.value, skip=("expect",))
    echoed = tuple(k for k, v in done.value.items() if inv.value.get(k) == v) if done else ()
    answer = f"{done.type} {_fields(done.value, skip=echoed)}" if done else "no completion"
    where = f"#{inv.index}" + (f"-{done.index}" if done else "")
    return f"{where:<8} t={inv.time:<6g} {inv.process:<11} {inv.f}({asked}) -> {answer}"


def _pairs_of(indices: Sequence[int], all_pairs: list[Pair]) -> list[Pair]:
    wanted = set(indices)
    return [p for p in all_pairs if wanted.intersection(p.indices)]


def render_run(result: RunResult, *, replay: str | None = None) -> list[str]:
    """The lines for one run: a verdict line, then each broken promise with its ops."""
    name = result.scenario.name
    label = LABELS[result.status]
    if result.status == "not_applicable":
        return [f"{label:<9} {name}: {result.reason}"]
    lines = [f"{label:<9} {name}  ({len(result.history)} ops, {result.virtual_seconds:g} s "
             f"virtual in {result.elapsed_s * 1000:.0f} ms)"]
    lines.extend(f"  warning: {w}" for w in result.warnings)
    for unrun in result.unrun:
        lines.append(f"  did not happen: {unrun['why']}")
    if result.unrun and result.fix:
        lines.append(f"    fix: {result.fix}")
    all_pairs = pairs(result.history)
    for check in result.checks:
        if check.verdict == "broken":
            lines.append(f"  promise broken ({check.checker}): {check.promise}")
            for violation in check.violations:
                lines.append(f"    - {violation.message}")
                lines.extend(f"        {format_pair(p)}"
                             for p in _pairs_of(violation.ops, all_pairs))
        elif check.verdict == "unknown":
            lines.append(f"  unknown ({check.checker}): {'; '.join(check.unknowns)}")
            lines.extend(f"    fix: {fix}" for fix in check.fixes)
    if replay and result.status in ("broken", "unknown"):
        lines.append(f"  replay: {replay}")
    return lines


class HasStatus(Protocol):
    """A run or a trial set: anything with a status."""

    @property
    def status(self) -> str: ...


def render_summary(results: Sequence[HasStatus], elapsed_s: float) -> str:
    counts = {status: sum(r.status == status for r in results) for status in LABELS}
    return (f"{counted(len(results), 'scenario')}: {counts['held']} passed, "
            f"{counts['broken']} violated, "
            f"{counts['unknown']} unknown, {counts['not_applicable']} not applicable "
            f"({elapsed_s:.2f} s)")


def exit_code(results: Sequence[HasStatus]) -> int:
    """0 all hold (not applicable allowed), 1 a violation, 3 no violation but some unknown."""
    statuses = {r.status for r in results}
    if "broken" in statuses:
        return 1
    if "unknown" in statuses:
        return 3
    return 0
