"""Checkers for jobs: one job per intent, duplicates, mismatched keys, owners."""

from __future__ import annotations

from collections import defaultdict

from harness.scenarios.checkers.base import (
    EvidenceNeed,
    Findings,
    attempt_jobs,
    checker,
    job_of,
    jobs,
    of,
    ok,
)
from harness.scenarios.history import Pair


def _served_creates(items: list[Pair]) -> int:
    return sum(1 for p in of(items, "create") if ok(p))


def _duplicates(items: list[Pair]) -> int:
    """Duplicate creates (same owner, key and intent) answered, beyond the first served one."""
    by_intent: dict[tuple[str, str, str], list[Pair]] = defaultdict(list)
    for pair in of(items, "create"):
        v = pair.invoke.value
        by_intent[(v["owner"], v["key"], v["fingerprint"])].append(pair)
    return sum(sum(p.type != "info" for p in group) - 1 for group in by_intent.values()
               if len(group) > 1 and any(ok(p) for p in group))


def _reuses(items: list[Pair]) -> list[Pair]:
    """Creates that reused a job's key with another intent."""
    by_key = {(j.owner, j.key): j for j in jobs(items).values()}
    out = []
    for pair in of(items, "create"):
        v = pair.invoke.value
        job = by_key.get((v["owner"], v["key"]))
        if job is not None and v["fingerprint"] != job.fingerprint:
            out.append(pair)
    return out


def _cross_owner(items: list[Pair]) -> int:
    known = jobs(items)
    attempt_to_job = attempt_jobs(items)
    count = 0
    for pair in items:
        if pair.invoke.f == "create" or pair.type == "info":
            continue
        alias = job_of(pair, attempt_to_job)
        job = known.get(alias) if alias else None
        if job is not None and pair.invoke.value.get("owner") not in (None, job.owner):
            count += 1
    owners_by_key: dict[str, set[str]] = defaultdict(set)
    for pair in of(items, "create"):
        if ok(pair):
            owners_by_key[pair.invoke.value["key"]].add(pair.invoke.value["owner"])
    return count + sum(len(o) - 1 for o in owners_by_key.values())


@checker("one (owner, key) is one job: every successful create names the same job, "
         "and exactly one of them created it",
         EvidenceNeed("create answered with a job", _served_creates))
def one_job_per_intent(items: list[Pair], found: Findings) -> None:
    by_key: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in of(items, "create"):
        if ok(pair):
            by_key[(pair.invoke.value["owner"], pair.invoke.value["key"])].append(pair)
    for (owner, key), group in by_key.items():
        named = sorted({str(p.value.get("job")) for p in group})
        if len(named) > 1:
            found.violation(f"{owner}'s key {key!r} made {len(named)} jobs: {', '.join(named)}",
                            group, kind="second_job")
        created = [p for p in group if p.value.get("created")]
        if len(created) > 1:
            found.violation(f"{len(created)} creates with {owner}'s key {key!r} answered 201 "
                            "created; only the first may", created, kind="created_twice")


@checker("a duplicate (same owner, key and intent) receives the same job, never an error — "
         "concurrent duplicates included",
         EvidenceNeed("duplicate create (same owner, key and intent) answered", _duplicates))
def duplicates_get_same_job(items: list[Pair], found: Findings) -> None:
    by_intent: dict[tuple[str, str, str], list[Pair]] = defaultdict(list)
    for pair in of(items, "create"):
        v = pair.invoke.value
        by_intent[(v["owner"], v["key"], v["fingerprint"])].append(pair)
    for (owner, key, _), group in by_intent.items():
        oks = [p for p in group if ok(p)]
        if not oks:
            continue
        job = oks[0].value.get("job")
        refused: dict[str, list[Pair]] = defaultdict(list)
        for pair in group:
            if pair.type == "info":
                found.unknown(f"op {pair.invoke.index}: a duplicate of {owner}'s {key!r} got "
                              "no answer")
            elif pair.type == "fail":
                refused[f"{pair.value.get('status')} {pair.value.get('error')}"].append(pair)
            elif pair.value.get("job") != job:
                found.violation(f"duplicates of {owner}'s {key!r} got different jobs "
                                f"({job} and {pair.value.get('job')})", [oks[0], pair])
        for answer, failed in refused.items():
            found.violation(f"{len(failed)} of {len(group)} duplicates of {owner}'s {key!r} "
                            f"{'was' if len(failed) == 1 else 'were'} answered {answer} instead "
                            f"of job {job}", [oks[0], *failed])


@checker("the same key with another intent is rejected ({conflict}) and changes nothing: "
         "never a silent replay of the first job, never a new job",
         EvidenceNeed("create reusing a key with another intent, answered",
                  lambda items: sum(p.type != "info" for p in _reuses(items))))
def mismatch_rejected_unchanged(items: list[Pair], found: Findings) -> None:
    known = jobs(items)
    by_key = {(j.owner, j.key): j for j in known.values()}
    conflict = found.terms["conflict"]
    for pair in _reuses(items):
        v = pair.invoke.value
        job = by_key[(v["owner"], v["key"])]
        who = f"{v['owner']}'s key {v['key']!r}"
        if pair.type == "info":
            found.unknown(f"op {pair.invoke.index}: the create with another intent under {who} "
                          "got no answer")
        elif ok(pair) and pair.value.get("job") == job.alias and not pair.value.get("created"):
            found.violation(
                f"{who} was reused with another intent and the service silently replayed the "
                f"first job ({job.alias}) instead of answering {conflict}",
                [job.created_by, pair], kind="replayed_first")
        elif ok(pair):
            found.violation(
                f"{who} was reused with another intent and the service ran a new job "
                f"({pair.value.get('job')}{', created' if pair.value.get('created') else ''}) "
                f"instead of answering {conflict}", [job.created_by, pair], kind="new_job")
        elif pair.value.get("error") != "idempotency_key_reused":
            found.violation(
                f"the create with another intent under {who} was answered "
                f"{pair.value.get('status')} {pair.value.get('error')}, not {conflict}",
                [job.created_by, pair], kind="refused_otherwise")
    for pair in of(items, "read"):
        held = known.get(str(pair.invoke.value.get("job")))
        if held is None or not ok(pair) or held.reported_fingerprint is None:
            continue
        if pair.value.get("fingerprint") != held.reported_fingerprint:
            found.violation(f"job {held.alias}'s fingerprint changed after it was created",
                            [held.created_by, pair], kind="changed")


@checker("owners are isolated: another owner's job is 404 (never readable, never 403), and a "
         "key belongs to its owner",
         EvidenceNeed("request on another owner's job, or key sent by two owners, answered",
                  _cross_owner))
def owners_isolated(items: list[Pair], found: Findings) -> None:
    known = jobs(items)
    attempt_to_job = attempt_jobs(items)
    for pair in items:
        if pair.invoke.f == "create":
            continue
        alias = job_of(pair, attempt_to_job)
        job = known.get(alias) if alias else None
        asker = pair.invoke.value.get("owner")
        if job is None or asker is None or asker == job.owner:
            continue
        value = pair.value
        shown = value.get("job") or value.get("attempt") or isinstance(
            value.get("attempts"), list) or isinstance(value.get("races"), list)
        if ok(pair) and not shown:
            found.unknown(f"op {pair.invoke.index}: {asker}'s {pair.invoke.f} on {job.owner}'s "
                          f"job was answered {value.get('status', 'ok')} without a job: neither "
                          "a leak nor the 404 it must be")
        elif ok(pair):
            found.violation(f"{asker} was answered {pair.invoke.f} on {job.owner}'s job "
                            f"{job.alias}; it must be 404", [job.created_by, pair])
        elif pair.type == "fail" and pair.value.get("status") != 404:
            found.violation(f"{asker}'s {pair.invoke.f} on {job.owner}'s job was answered "
                            f"{pair.value.get('status')}, which reveals that it exists; it must "
                            "be 404", [job.created_by, pair])
        elif pair.type == "info":
            found.unknown(f"op {pair.invoke.index}: {asker}'s {pair.invoke.f} got no answer")
    by_key: dict[str, list[Pair]] = defaultdict(list)
    for pair in of(items, "create"):
        if ok(pair) and pair.value.get("job"):  # an answer naming no job shows no one's job
            by_key[pair.invoke.value["key"]].append(pair)
    for key, group in by_key.items():
        owner_of: dict[str, Pair] = {}
        for pair in group:
            named = str(pair.value.get("job"))
            first = owner_of.setdefault(named, pair)
            if first.invoke.value["owner"] != pair.invoke.value["owner"]:
                found.violation(f"{pair.invoke.value['owner']}'s create with key {key!r} "
                                f"returned {first.invoke.value['owner']}'s job {named}",
                                [first, pair])
