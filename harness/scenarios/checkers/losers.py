"""Loser semantics: how every answer to a concurrent duplicate is classified, and which are allowed.

A concurrent group is N identical creates sent together (burst) or spaced (staggered, straddle).
One copy creates the job; every other copy is a *loser*, and its answer is one of:

==============================  =======================================================  ========
class                           what the copy was answered                                allowed
==============================  =======================================================  ========
``created``                     201: it made the job                                       once
``same job``                    the job, at once (a replay)                                yes
``in flight → same job``        the profile's declared "in progress" answer (IETF: 409),   yes
                                then the job after the engine retried
``locked → same job``           423 / 429, then the job after retrying                     if no
                                                                                           extra
                                                                                           side
                                                                                           effect
``created again``               another 201                                                no
``other job``                   a different job                                            no
``409 conflict``                a 409 that is not the declared in-progress answer: a        no
                                refusal for a request that never ran
``rejected as another payload`` the key-reused answer, for an identical copy               no
``still in progress``           in progress until the engine stopped asking               no
``still locked``                423 / 429 until the engine stopped asking                 no
``5xx``                         a server error (its body is kept)                         no
``refused <status>``            any other refusal                                         no
``no answer``                   nothing came back                                          unknown
==============================  =======================================================  ========
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from harness.scenarios.checkers.base import EvidenceNeed, Findings, checker, jobs, of, ok
from harness.scenarios.checkers.side_effects import COUNTER_FIX, side_effects_made
from harness.scenarios.history import Op, Pair, pairs, shown_text

ALLOWED = ("created", "same job", "in flight → same job", "locked → same job")
CLASS_ORDER = ("created", "same job", "in flight → same job", "locked → same job",
               "created again", "other job", "409 conflict", "rejected as another payload",
               "still in progress", "still locked", "5xx", "no answer")


def groups(items: list[Pair]) -> dict[tuple[str, str, str], list[Pair]]:
    """The members of each concurrent create group, by (owner, key, fingerprint). Copies sent
    with another intent than the one that made the key's job are not duplicates of it (they
    are judged by ``mismatch_rejected_unchanged``) and are left out."""
    found: dict[tuple[str, str, str], list[Pair]] = defaultdict(list)
    made = {(j.owner, j.key): j.fingerprint for j in jobs(items).values()}
    for pair in of(items, "create"):
        if "/" in pair.invoke.process:
            v = pair.invoke.value
            if made.get((v["owner"], v["key"]), v["fingerprint"]) != v["fingerprint"]:
                continue
            found[(v["owner"], v["key"], v["fingerprint"])].append(pair)
    return found


def _losers_answered(items: list[Pair]) -> int:
    return sum(max(0, sum(p.type != "info" for p in members) - 1)
               for members in groups(items).values())


def _group_job(members: Sequence[Pair]) -> str | None:
    created = [p.value.get("job") for p in members if ok(p) and p.value.get("created")]
    if created:
        return str(created[0])
    named = Counter(str(p.value.get("job")) for p in members if ok(p))
    return named.most_common(1)[0][0] if named else None


def classify(pair: Pair, job: str | None, first_created: bool) -> str:
    """The class of one group member's answer (see the module docstring)."""
    value = pair.value
    busy = value.get("busy") or {}
    if pair.type == "info":
        return "no answer"
    if ok(pair):
        if value.get("created"):
            return "created" if first_created else "created again"
        if str(value.get("job")) != job:
            return "other job"
        if busy.get("locked"):
            return "locked → same job"
        if busy.get("in_flight"):
            return "in flight → same job"
        return "same job"
    status, error = value.get("status"), value.get("error")
    if error == "still_in_progress":
        return "still in progress"
    if error == "still_locked":
        return "still locked"
    if error == "idempotency_key_reused":
        return "rejected as another payload"
    if isinstance(status, int) and status >= 500:
        return "5xx"
    if status == 409:
        return "409 conflict"
    return f"refused {status}"


def classified(items: list[Pair]) -> list[tuple[str, Pair]]:
    """Every group member with its class."""
    out: list[tuple[str, Pair]] = []
    for members in groups(items).values():
        job = _group_job(members)
        seen_created = False
        for pair in members:
            first = not seen_created
            label = classify(pair, job, first)
            seen_created = seen_created or label == "created"
            out.append((label, pair))
    return out


def loser_classes(history: Sequence[Op]) -> Counter[str]:
    """The histogram of classes over every concurrent group in ``history``."""
    return Counter(label for label, _ in classified(pairs(history)))


def busy_answers(history: Sequence[Op]) -> Counter[str]:
    """How many busy answers the group members got before their final one, by kind:
    ``in flight`` (the profile's declared in-progress answer) and ``locked`` (423/429…): answers
    for requests that never ran, each of which the client had to send again."""
    total: Counter[str] = Counter()
    for _, pair in classified(pairs(history)):
        for kind, n in (pair.value.get("busy") or {}).items():
            total["in flight" if kind == "in_flight" else kind] += int(n)
    return total


def ordered(histogram: Counter[str]) -> list[tuple[str, int]]:
    """A histogram's classes in the table's order (others after, by name)."""
    known = [(c, histogram[c]) for c in CLASS_ORDER if histogram.get(c)]
    rest = sorted((c, n) for c, n in histogram.items() if c not in CLASS_ORDER and n)
    return known + rest


def merge(histograms: Iterable[Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for histogram in histograms:
        total.update(histogram)
    return total


@checker("every answer to a concurrent duplicate is allowed: the job (at once, or after the "
         "declared in-progress answer, or after {locked} busy/locked answers with no extra side "
         "effect), never a refusal for a request that never ran, an error or another job",
         EvidenceNeed("concurrent duplicate answered", _losers_answered))
def loser_answers_allowed(items: list[Pair], found: Findings) -> None:
    by_class: dict[tuple[tuple[str, str, str], str], list[Pair]] = defaultdict(list)
    sizes: Counter[tuple[str, str, str]] = Counter()
    for label, pair in classified(items):
        v = pair.invoke.value
        group = (v["owner"], v["key"], v["fingerprint"])
        sizes[group] += 1
        by_class[(group, label)].append(pair)
    observed = side_effects_made(items)
    for ((owner, key, _), label), members in by_class.items():
        n, total = len(members), sizes[(owner, key, _)]
        who = f"{n} of {total} concurrent duplicates of {owner}'s {key!r}"
        if label == "no answer":
            found.unknown(f"{who} got no answer")
        elif label == "locked → same job":
            if observed is None:
                found.unknown(f"{who} were answered {found.terms['locked']} (busy, never ran) "
                              "before the job; that is allowed only with no extra side effect, "
                              "which this target does not let us count",
                              COUNTER_FIX)
            elif observed[0] > len({(p.invoke.value["owner"], p.invoke.value["key"])
                                    for p in of(items, "create") if ok(p)}):
                found.violation(f"{who} were answered {found.terms['locked']} (busy, never ran) "
                                "before the job, and the counter shows an extra side effect: "
                                "the busy answer hid a request that ran", members, observed[1],
                                kind=label)
        elif label not in ALLOWED:
            found.violation(f"{who} {'was' if n == 1 else 'were'} answered {_explain(label)}"
                            f"{_body(members)}", members, kind=label)


def _explain(label: str) -> str:
    return {
        "created again": "201 created again (another creation for the same click)",
        "other job": "another job",
        "409 conflict": "409 conflict — a refusal for a request that never ran (only the "
                        "profile's declared in-progress answer, then the job, is allowed)",
        "rejected as another payload": "as a different payload, though the body was identical",
        "still in progress": "in progress until the engine stopped asking",
        "still locked": "423/429 locked until the engine stopped asking",
        "5xx": "a server error",
    }.get(label, label)


def _body(members: Sequence[Pair]) -> str:
    body = next((p.value.get("body") for p in members if p.value.get("body")), None)
    return f"; body: {shown_text(str(body))}" if body else ""
