"""What a checker returns, how checkers are registered, and facts read from a history.

A checker is a pure function of the history (no target, no I/O): it returns ``valid``,
``invalid`` (with the violations and the ops that show them) or ``unknown`` (an indeterminate op
hides the answer, or the history lacks what the checker judges). Checkers are named for the
promise they guard.

No verdict without evidence: each checker declares what it must have seen (:class:`EvidenceNeed`: a
claim, a timeout, a duplicate…). Run with ``require_evidence`` (the scenario runner does), a
checker whose evidence the history lacks is ``unknown`` — never ``valid`` on an empty history.
An answer ``401`` is the service refusing *our* credentials, not evidence against it: a violation
that rests on one is reported unknown, with the fix (check ``--tokens-file``).

Promise texts and messages name the target's own answers (``terms``: a profile declaring ``422``
for a reused key is told ``422``, not API.md's ``409``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.domain.verdicts import CHECK_WORD, Promise
from harness.scenarios.history import Op, Pair, pairs

Verdict = Promise  # one vocabulary: harness.domain.verdicts (held | broken | unknown)

#: how the checkers name a target's answers, by default (API.md); a profile replaces them
DEFAULT_TERMS: dict[str, str] = {
    "conflict": "409 idempotency_key_reused",
    "replay_mark": "Idempotent-Replayed: true",
    "locked": "423/429",
    "in_flight": "the declared in-progress answer",
}
UNAUTHENTICATED = 401
TOKENS_FIX = ("check --tokens-file (or HARNESS_TOKENS): every owner needs a token the service "
              "accepts (and a profile's auth: header, if it has one)")
UNREADABLE_FIX = ("describe the answer in the target profile: for a list answered as a top-level "
                  "JSON array set items: . on the operation (inside an object: items: data.items), "
                  "and map an object's fields with fields:")


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
    """A checker's verdict on one history.

    ``unknowns``: why the verdict is unknown (reasons, one per finding); ``fixes``: what the
    user can do about it (deduplicated). ``evidence``: what the checker must have seen to judge
    (None: it judges whatever the history shows); ``seen``: how many ops of it the history held.
    """

    checker: str
    promise: str
    verdict: Verdict
    violations: tuple[Violation, ...] = ()
    unknowns: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    evidence: str | None = None
    seen: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "checker": self.checker,
            "promise": self.promise,
            "verdict": CHECK_WORD[self.verdict],  # the published word (valid, invalid)
            "violations": [v.to_json() for v in self.violations],
            "unknowns": list(self.unknowns),
        }
        if self.fixes:
            data["fixes"] = list(self.fixes)
        if self.evidence is not None:
            data["evidence"] = {"needs": self.evidence, "seen": self.seen}
        return data


@dataclass
class Findings:
    """What a checker body collects: violations, and reasons the verdict may be unknown (with
    what to do about them). ``terms`` names the target's answers (see :data:`DEFAULT_TERMS`)."""

    violations: list[Violation] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    terms: Mapping[str, str] = field(default_factory=lambda: DEFAULT_TERMS)

    def violation(self, message: str, *groups: Pair | Op | Sequence[Pair | Op],
                  kind: str = "") -> None:
        indices: set[int] = set()
        for group in groups:
            items = group if isinstance(group, Sequence) else [group]
            for item in items:
                indices.update(item.indices if isinstance(item, Pair) else [item.index])
        self.violations.append(Violation(message, tuple(sorted(indices)), kind))

    def unknown(self, reason: str, fix: str | None = None) -> None:
        self.unknowns.append(reason)
        if fix and fix not in self.fixes:
            self.fixes.append(fix)


@dataclass(frozen=True, slots=True)
class EvidenceNeed:
    """What a checker must have seen to judge: ``what`` (a phrase: "a claim answered won or
    lost"), and ``count(pairs)``: how many ops of it the history holds."""

    what: str
    count: Callable[[list[Pair]], int]
    #: answer fields the evidence consists of: a target whose profile maps none of them cannot
    #: show it, and the checker is then judged only when exercised
    fields: tuple[str, ...] = ()


Body = Callable[[list[Pair], Findings], None]


class Checker(Protocol):
    """``checker(history, terms=None, require_evidence=False, items=None) -> CheckResult``;
    ``items``: ``pairs(history)`` when the caller has them already (several checkers, one
    history)."""

    __name__: str

    def __call__(self, history: Sequence[Op], terms: Mapping[str, str] | None = None,
                 require_evidence: bool = False,
                 items: list[Pair] | None = None) -> CheckResult: ...


CHECKERS: dict[str, Checker] = {}
PROMISES: dict[str, str] = {}  # the promise texts in API.md's terms
EVIDENCE: dict[str, EvidenceNeed | None] = {}


def promise_text(name: str, terms: Mapping[str, str] | None = None) -> str:
    """The promise of checker ``name``, naming the target's answers."""
    return TEMPLATES[name].format_map({**DEFAULT_TERMS, **(terms or {})})


TEMPLATES: dict[str, str] = {}


def checker(promise: str, needs: EvidenceNeed | None = None) -> Callable[[Body], Checker]:
    """Register ``body(pairs, findings)`` as the checker named after the function; ``promise``
    may name the target's answers (``{conflict}``, ``{replay_mark}``, ``{locked}``…)."""

    def register(body: Body) -> Checker:
        name = body.__name__

        def check(history: Sequence[Op], terms: Mapping[str, str] | None = None,
                  require_evidence: bool = False,
                  items: list[Pair] | None = None) -> CheckResult:
            words = {**DEFAULT_TERMS, **(terms or {})}
            found = Findings(terms=words)
            if items is None:
                items = pairs(history)
            body(items, found)
            if found.violations:  # they only turn violations into unknowns
                _not_evidence_if_unauthenticated(items, found)
                _not_evidence_if_unreadable(items, found)
            seen = needs.count(items) if needs is not None else None
            if require_evidence and needs is not None and not seen and not found.violations:
                found.unknown(f"saw no {needs.what}: there was nothing to judge",
                              "see which step did not happen (the run's unknowns), or list this "
                              "checker under checkers_if_exercised: when the scenario only "
                              "sometimes exercises it")
            verdict: Verdict = (
                "broken" if found.violations else "unknown" if found.unknowns else "held"
            )
            return CheckResult(name, promise.format_map(words), verdict, tuple(found.violations),
                               tuple(found.unknowns), tuple(found.fixes),
                               needs.what if needs is not None else None, seen)

        check.__name__ = name
        check.__doc__ = promise
        CHECKERS[name] = check
        TEMPLATES[name] = promise
        PROMISES[name] = promise.format_map(DEFAULT_TERMS)
        EVIDENCE[name] = needs
        return check

    return register


def _not_evidence(found: Findings, suspects: dict[int, Pair],
                  why: Callable[[Pair, Violation], str], fix: str) -> None:
    """Each violation resting on one of ``suspects`` (completion index → op) becomes unknown:
    ``why(op, violation)``, with ``fix``."""
    if not suspects:
        return
    kept = []
    for violation in found.violations:
        hit = [suspects[i] for i in violation.ops if i in suspects]
        if hit:
            found.unknown(why(hit[0], violation), fix)
        else:
            kept.append(violation)
    found.violations[:] = kept


def _not_evidence_if_unauthenticated(items: list[Pair], found: Findings) -> None:
    """A violation resting on a 401 answer (one the scenario did not expect) becomes unknown:
    the service refused our credentials, which says nothing about its promises."""
    refused = {p.completion.index: p for p in items
               if p.completion is not None and p.type == "fail"
               and p.value.get("status") == UNAUTHENTICATED
               and (p.invoke.value.get("expect") or {}).get("error") != "unauthenticated"}

    def why(op: Pair, _: Violation) -> str:
        who = op.invoke.value.get("owner")
        return (f"op {op.invoke.index} ({op.invoke.f}" + (f" as {who}" if who else "")
                + ") was refused 401 unauthenticated: not evidence against the service")

    _not_evidence(found, refused, why, TOKENS_FIX)


def _not_evidence_if_unreadable(items: list[Pair], found: Findings) -> None:
    """A violation resting on an answer the harness could not read (``malformed``: not the
    object or list it expects, e.g. a top-level array the profile does not describe) becomes
    unknown, with the profile fix: the service answered, but not in a shape we understood."""
    unread = {p.completion.index: p for p in items
              if p.completion is not None and p.type == "ok" and p.value.get("malformed")}
    _not_evidence(found, unread, lambda op, v: (
        f"op {op.invoke.index} ({op.invoke.f}): the answer could not be read ({v.message}): "
        "not evidence against the service"), UNREADABLE_FIX)


# -- evidence -------------------------------------------------------------------------------------
def answered(items: list[Pair], *fs: str) -> int:
    """How many ops of ``fs`` got a definite answer (ok or fail)."""
    return sum(1 for p in of(items, *fs) if p.type in ("ok", "fail"))


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
