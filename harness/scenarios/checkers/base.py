"""What a checker returns, how checkers are registered, and facts read from a history.

A checker is a pure function of the history (no target, no I/O): it returns ``valid``,
``invalid`` (with the violations and the ops that show them) or ``unknown`` (an indeterminate op
hides the answer). Checkers are named for the promise they guard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.scenarios.history import Op, Pair, pairs

Verdict = Literal["valid", "invalid", "unknown"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken promise: what happened, and the indices of the ops that show it; ``kind``
    names the way it broke when a checker has several (rates are counted per kind)."""

    message: str
    ops: tuple[int, ...]
    kind: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"message": self.message, "ops": list(self.ops)}
        if self.kind:
            data["kind"] = self.kind
        return data


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A checker's verdict on one history."""

    checker: str
    promise: str
    verdict: Verdict
    violations: tuple[Violation, ...] = ()
    unknowns: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "checker": self.checker,
            "promise": self.promise,
            "verdict": self.verdict,
            "violations": [v.to_json() for v in self.violations],
            "unknowns": list(self.unknowns),
        }


@dataclass
class Findings:
    """What a checker body collects: violations, and reasons the verdict may be unknown."""

    violations: list[Violation] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)

    def violation(self, message: str, *groups: Pair | Op | Sequence[Pair | Op],
                  kind: str = "") -> None:
        indices: set[int] = set()
        for group in groups:
            items = group if isinstance(group, Sequence) else [group]
            for item in items:
                indices.update(item.indices if isinstance(item, Pair) else [item.index])
        self.violations.append(Violation(message, tuple(sorted(indices)), kind))

    def unknown(self, reason: str) -> None:
        self.unknowns.append(reason)


Body = Callable[[list[Pair], Findings], None]
Checker = Callable[[Sequence[Op]], CheckResult]
CHECKERS: dict[str, Checker] = {}
PROMISES: dict[str, str] = {}


def checker(promise: str) -> Callable[[Body], Checker]:
    """Register ``body(pairs, findings)`` as the checker named after the function."""

    def register(body: Body) -> Checker:
        name = body.__name__

        def check(history: Sequence[Op]) -> CheckResult:
            found = Findings()
            body(pairs(history), found)
            verdict: Verdict = (
                "invalid" if found.violations else "unknown" if found.unknowns else "valid"
            )
            return CheckResult(name, promise, verdict, tuple(found.violations),
                               tuple(found.unknowns))

        check.__name__ = name
        check.__doc__ = promise
        CHECKERS[name] = check
        PROMISES[name] = promise
        return check

    return register


# -- facts ---------------------------------------------------------------------------------------
def ok(pair: Pair) -> bool:
    return pair.completion is not None and pair.completion.type == "ok"


def of(items: list[Pair], *fs: str) -> list[Pair]:
    return [p for p in items if p.invoke.f in fs]


@dataclass(frozen=True, slots=True)
class JobFacts:
    """A job as its creation showed it: owner, key, intent fingerprint, policy."""

    alias: str
    owner: str
    key: str
    fingerprint: str
    reported_fingerprint: str | None
    max_open_attempts: int
    created_by: Pair


def jobs(items: list[Pair]) -> dict[str, JobFacts]:
    """Each job by alias, from the create that made it (``created: true``), else the first ok."""
    found: dict[str, JobFacts] = {}
    for pair in of(items, "create"):
        if not ok(pair) or not pair.value.get("job"):
            continue
        alias = pair.value["job"]
        held = found.get(alias)
        if held is not None and (held.created_by.value.get("created") or
                                 not pair.value.get("created")):
            continue
        inv = pair.invoke.value
        found[alias] = JobFacts(alias, inv["owner"], inv["key"], inv["fingerprint"],
                                pair.value.get("fingerprint"), int(inv.get("max_open_attempts", 1)),
                                pair)
    return found


def attempt_jobs(items: list[Pair]) -> dict[str, str]:
    """Attempt alias → job alias, from the starts that succeeded."""
    return {p.value["attempt"]: p.invoke.value["job"]
            for p in of(items, "start") if ok(p) and p.value.get("attempt")}


def job_of(pair: Pair, attempt_to_job: dict[str, str]) -> str | None:
    """The job an op is about (directly, or through its attempt)."""
    value = pair.invoke.value
    if "job" in value:
        return str(value["job"])
    attempt = value.get("attempt")
    return attempt_to_job.get(attempt) if attempt else None


def ends_before(a: Pair, b: Pair) -> bool:
    """``a`` completed before ``b`` was invoked (real-time order in the history)."""
    return a.completion is not None and a.completion.index < b.invoke.index
