"""The scripted-outcomes checker: what the scenario says must happen, happens.

The safety checkers pass a store that refuses everything; ``expect:`` on a step (recorded in
the invoke) says what a correct store answers, e.g. ``{created: true}``, ``{outcome: won}`` or
``{error: attempt_in_flight}``. ``count`` compares the length of a listed collection.
"""

from __future__ import annotations

from typing import Any

from harness.scenarios.checkers.base import Findings, checker
from harness.scenarios.history import Pair


def _unobservable(expect: dict[str, Any], pair: Pair) -> list[str]:
    """Expected fields the target never answers (e.g. a profile without versions)."""
    if pair.type != "ok":
        return []
    return [k for k in expect if k not in ("error", "count") and k not in pair.value]


def _mismatches(expect: dict[str, Any], pair: Pair) -> list[str]:
    wanted = dict(expect)
    error = wanted.pop("error", None)
    value = pair.value
    got = f"{value.get('status')} {value.get('error')}" if pair.type == "fail" else "success"
    if error is not None:
        if pair.type != "fail" or value.get("error") != error:
            return [f"expected {error}, got {got}"]
    elif pair.type != "ok":
        return [f"expected success, got {got}"]
    problems = []
    count = wanted.pop("count", None)
    if count is not None:
        listed = next((v for v in value.values() if isinstance(v, list)), None)
        if listed is None or len(listed) != count:
            problems.append(f"expected {count} listed, got "
                            f"{len(listed) if listed is not None else 'no list'}")
    for key, want in wanted.items():
        if key in value and value[key] != want:
            problems.append(f"expected {key}: {want!r}, got {value.get(key)!r}")
    return problems


@checker("the scripted outcomes happen: every step's expect: holds (refusing everything is not "
         "safe, it is broken)")
def scripted_outcomes(items: list[Pair], found: Findings) -> None:
    for pair in items:
        expect = pair.invoke.value.get("expect")
        if expect is None:
            continue
        if pair.type == "info":
            found.unknown(f"op {pair.invoke.index} ({pair.invoke.f}) got no answer")
            continue
        for problem in _mismatches(expect, pair):
            found.violation(f"{pair.invoke.process} {pair.invoke.f}: {problem}", pair)
        for key in _unobservable(expect, pair):
            found.unknown(f"op {pair.invoke.index} ({pair.invoke.f}): the target does not "
                          f"answer {key!r}")
