"""Checkers for jobs: one job per intent, duplicates, mismatched keys, owners."""

from __future__ import annotations

from collections import defaultdict

from harness.scenarios.checkers.base import (
    Findings,
    attempt_jobs,
    checker,
    job_of,
    jobs,
    of,
    ok,
)
from harness.scenarios.history import Pair


@checker("one (owner, key) is one job: every successful create names the same job, "
         "and exactly one of them created it")
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
         "concurrent duplicates included")
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


@checker("the same key with another intent is rejected (409 idempotency_key_reused) and "
         "changes nothing")
def mismatch_rejected_unchanged(items: list[Pair], found: Findings) -> None:
    known = jobs(items)
    by_key = {(j.owner, j.key): j for j in known.values()}
    for pair in of(items, "create"):
        v = pair.invoke.value
        job = by_key.get((v["owner"], v["key"]))
        if job is None or v["fingerprint"] == job.fingerprint:
            continue
        if pair.type == "info":
            found.unknown(f"op {pair.invoke.index}: the mismatched create got no answer")
        elif ok(pair):
            found.violation(
                f"{v['owner']}'s key {v['key']!r} was reused with another intent and the "
                f"store answered job {pair.value.get('job')} "
                f"({'created' if pair.value.get('created') else 'replayed'}) instead of 409 "
                "idempotency_key_reused", [job.created_by, pair])
        elif pair.value.get("error") != "idempotency_key_reused":
            found.violation(
                f"the mismatched create was answered {pair.value.get('status')} "
                f"{pair.value.get('error')}, not 409 idempotency_key_reused",
                [job.created_by, pair])
    for pair in of(items, "read"):
        job = known.get(str(pair.invoke.value.get("job")))
        if job is None or not ok(pair) or job.reported_fingerprint is None:
            continue
        if pair.value.get("fingerprint") != job.reported_fingerprint:
            found.violation(f"job {job.alias}'s fingerprint changed after it was created",
                            [job.created_by, pair])


@checker("owners are isolated: another owner's job is 404 (never readable, never 403), and a "
         "key belongs to its owner")
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
        if ok(pair):
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
        if ok(pair):
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
