"""Checkers for claims: one winner, cancelled never wins, late results, results, versions."""

from __future__ import annotations

from harness.scenarios.checkers.base import (
    EvidenceNeed,
    Findings,
    attempt_jobs,
    checker,
    of,
    ok,
)
from harness.scenarios.history import Pair

#: the race digest scheme under which ``payload_sha256`` may be compared with our own digest
#: of the result (the reference store's); any other, or none declared: races are matched by id
DIGEST_SCHEME = "sha256-rfc8785"


def _winners(items: list[Pair]) -> dict[str, list[Pair]]:
    """Job alias → the ok ``succeeded`` events that said ``won``, first attempt first."""
    attempt_to_job = attempt_jobs(items)
    found: dict[str, list[Pair]] = {}
    for pair in of(items, "succeeded"):
        if ok(pair) and pair.value.get("outcome") == "won":
            job = attempt_to_job.get(str(pair.invoke.value["attempt"]))
            if job is not None:
                found.setdefault(job, []).append(pair)
    return found


def _reads(items: list[Pair], job: str) -> list[Pair]:
    return [p for p in of(items, "read") if ok(p) and p.invoke.value.get("job") == job]


def _invoked_after(pair: Pair, earlier: Pair) -> bool:
    """``pair`` began after ``earlier`` ended: an op overlapping it may be ordered before it."""
    return earlier.completion is not None and pair.invoke.index > earlier.completion.index


def _after(items: list[Pair], pair: Pair) -> list[Pair]:
    end = pair.completion.index if pair.completion else pair.invoke.index
    return [p for p in items if p.invoke.index > end]


def _claims(items: list[Pair]) -> int:
    return sum(1 for p in of(items, "succeeded") if ok(p) and p.value.get("outcome"))


def _late(items: list[Pair]) -> list[tuple[Pair, str, Pair | None, Pair | None]]:
    """Each late result: (the result, its job, the first winner if another won before it, the
    cancel if it came after its attempt was cancelled)."""
    attempt_to_job = attempt_jobs(items)
    winners = _winners(items)
    cancelled = {str(p.invoke.value["attempt"]): p for p in of(items, "cancelled") if ok(p)}
    out = []
    for result in of(items, "succeeded"):
        attempt = str(result.invoke.value["attempt"])
        job = attempt_to_job.get(attempt)
        if job is None:
            continue
        first = winners.get(job, [None])[0]
        by_other = (first is not None and first.invoke.value["attempt"] != attempt
                    and first.completion is not None
                    and first.completion.index < result.invoke.index)
        cancel = cancelled.get(attempt)
        after_cancel = cancel is not None and cancel.completion is not None and \
            cancel.completion.index < result.invoke.index
        if by_other or after_cancel:
            out.append((result, job, first if by_other else None,
                        cancel if after_cancel else None))
    return out


def _cancelled_results(items: list[Pair]) -> int:
    cancelled = {str(p.invoke.value["attempt"]): p for p in of(items, "cancelled") if ok(p)}
    return sum(1 for p in of(items, "succeeded") if p.type != "info"
               and (c := cancelled.get(str(p.invoke.value.get("attempt")))) is not None
               and c.completion is not None and c.completion.index < p.invoke.index)


def _reads_after_win(items: list[Pair]) -> int:
    won = [p for p in of(items, "succeeded") if ok(p) and p.value.get("outcome") == "won"]
    if not won:
        return 0
    first = min(p.completion.index for p in won if p.completion is not None)
    return sum(1 for p in of(items, "read") if ok(p) and p.invoke.index > first)


def _versions_seen(items: list[Pair]) -> int:
    """Versions a job showed, beyond its first: a second one is needed to see a rise."""
    counts: dict[str, int] = {}
    for pair in of(items, "create", "read"):
        if ok(pair) and isinstance(pair.value.get("version"), int):
            job = str(pair.value.get("job"))
            counts[job] = counts.get(job, 0) + 1
    return sum(n - 1 for n in counts.values())


@checker("one winner per job: at most one attempt's claim wins, and the job names that winner",
         EvidenceNeed("claim (an attempt's result answered won or lost)", _claims))
def one_winner_per_job(items: list[Pair], found: Findings) -> None:
    for job, won in _winners(items).items():
        names = sorted({str(p.invoke.value["attempt"]) for p in won})
        if len(names) > 1:
            every = "both" if len(names) == 2 else "all"
            found.violation(f"attempts {', '.join(names[:-1])} and {names[-1]} {every} won the "
                            f"same job ({job})", won)
        winner = str(won[0].invoke.value["attempt"])
        for read in _reads(_after(items, won[0]), job):
            named = read.value.get("completed_by")
            if named is not None and named != winner and len(names) == 1:
                found.violation(f"job {job} names {named} as its winner, but {winner} won",
                                [won[0], read])


@checker("a cancelled attempt never wins: its late result loses and it stays cancelled",
         EvidenceNeed("result of a cancelled attempt, answered", _cancelled_results))
def cancelled_never_wins(items: list[Pair], found: Findings) -> None:
    attempt_to_job = attempt_jobs(items)
    for cancel in of(items, "cancelled"):
        if not ok(cancel):
            continue
        attempt = str(cancel.invoke.value["attempt"])
        later = _after(items, cancel)
        for result in of(later, "succeeded"):
            if result.invoke.value.get("attempt") != attempt or not ok(result):
                continue
            if result.value.get("outcome") == "won":
                found.violation(f"{attempt} was cancelled, then its result won the job",
                                [cancel, result])
            elif result.value.get("state") != "cancelled":
                found.violation(f"{attempt} was cancelled, then its late result moved it to "
                                f"{result.value.get('state')!r}; it must stay cancelled",
                                [cancel, result])
        job = attempt_to_job.get(attempt)
        for read in _reads(later, job or ""):
            if read.value.get("completed_by") == attempt:
                found.violation(f"job {job} was completed by {attempt} after {attempt} was "
                                "cancelled", [cancel, read])


@checker("a late result is discarded and recorded: it loses, the job keeps the winner's "
         "result, and the race is listed (found by the attempt's id)",
         EvidenceNeed("late result (after another attempt won, or after a cancel), answered",
                  lambda items: sum(r.type != "info" for r, *_ in _late(items))))
def late_result_discarded_recorded(items: list[Pair], found: Findings) -> None:
    for result, job, first, cancel in _late(items):
        attempt = str(result.invoke.value["attempt"])
        why = [p for p in (first, cancel) if p is not None]
        payload = result.invoke.value.get("result_sha256")
        if result.type == "info":
            found.unknown(f"op {result.invoke.index}: {attempt}'s late result got no answer")
            continue
        if result.type == "fail":
            found.violation(f"{attempt}'s late result was refused ({result.value.get('error')}); "
                            "it must be answered as lost and recorded", [*why, result])
            continue
        if result.value.get("outcome") != "lost":
            found.violation(f"{attempt}'s late result was answered "
                            f"{result.value.get('outcome')!r}; it must lose", [*why, result])
        later = _after(items, result)
        races = [p for p in of(later, "races") if ok(p) and p.invoke.value.get("job") == job]
        if not races:
            found.unknown(f"no races read after {attempt}'s late result (op "
                          f"{result.invoke.index})", "add a races: step after the late result")
        else:
            _recorded(found, races[0], attempt, first, payload, result)
        winner_payload = first.invoke.value.get("result_sha256") if first is not None else None
        for read in _reads(later, job):
            if read.value.get("result_sha256") == payload and payload != winner_payload:
                found.violation(f"job {job} now holds {attempt}'s late result", [result, read])


def _recorded(found: Findings, races: Pair, attempt: str, first: Pair | None,
              payload: str | None, result: Pair) -> None:
    """The race of ``attempt`` is listed: found by its id; its winner, when the service names
    one, is the attempt that won; its digest is compared only under a declared scheme."""
    entry = next((r for r in races.value.get("races", []) if r.get("attempt") == attempt), None)
    job = races.invoke.value.get("job")
    if entry is None:
        found.violation(f"{attempt}'s late result is not recorded in job {job}'s races (no race "
                        f"names {attempt})", [result, races])
        return
    winner = str(first.invoke.value["attempt"]) if first is not None else None
    if winner is not None and entry.get("winner") is not None and entry["winner"] != winner:
        found.violation(f"job {job}'s race for {attempt} names {entry['winner']} as the winner, "
                        f"but {winner} won", [first, result, races] if first else [result, races])
    scheme = races.invoke.value.get("race_digest")
    if scheme == DIGEST_SCHEME and payload is not None \
            and entry.get("payload_sha256") not in (None, payload):
        found.violation(f"job {job}'s race for {attempt} records a digest "
                        f"({str(entry.get('payload_sha256'))[:12]}…) that is not the "
                        f"{DIGEST_SCHEME} digest of {attempt}'s result ({payload[:12]}…)",
                        [result, races])


@checker("no result is ever overwritten: once a job has a result, every later read shows the "
         "same result and the same winner",
         EvidenceNeed("read of a job after a claim won", _reads_after_win))
def results_never_overwritten(items: list[Pair], found: Findings) -> None:
    attempt_to_job = attempt_jobs(items)
    established: dict[str, tuple[str | None, str | None, Pair]] = {}
    done = [p for p in items if ok(p) and p.completion is not None]
    for pair in sorted(done, key=lambda p: p.completion.index if p.completion else 0):
        if pair.invoke.f == "succeeded" and pair.value.get("outcome") == "won":
            job = attempt_to_job.get(str(pair.invoke.value["attempt"]))
            if job is not None and job not in established:
                established[job] = (pair.invoke.value.get("result_sha256"),
                                    str(pair.invoke.value["attempt"]), pair)
        elif pair.invoke.f == "read":
            job = str(pair.invoke.value["job"])
            now = (pair.value.get("result_sha256"), pair.value.get("completed_by"))
            held = established.get(job)
            if held is None:
                if now[0] is not None:
                    established[job] = (now[0], now[1], pair)
            elif now != held[:2] and _invoked_after(pair, held[2]):
                found.violation(
                    f"job {job}'s result changed: it was {held[1]}'s "
                    f"({str(held[0])[:12]}…), now {now[1]}'s ({str(now[0])[:12]}…)",
                    [held[2], pair])


@checker("versions only rise: a job's version never goes down, and is past the winner's "
         "read version once a claim has won",
         EvidenceNeed("second version of a job (the target must answer versions)", _versions_seen,
                  fields=("version",)))
def versions_only_rise(items: list[Pair], found: Findings) -> None:
    attempt_to_job = attempt_jobs(items)
    read_version = {str(p.value["attempt"]): p.value.get("read_version")
                    for p in of(items, "start") if ok(p) and p.value.get("attempt")}
    seen: dict[str, tuple[int, Pair]] = {}
    floor: dict[str, tuple[int, Pair]] = {}
    done = [p for p in items if ok(p) and p.completion is not None]
    for pair in sorted(done, key=lambda p: p.completion.index if p.completion else 0):
        if pair.invoke.f == "succeeded" and pair.value.get("outcome") == "won":
            attempt = str(pair.invoke.value["attempt"])
            job = attempt_to_job.get(attempt)
            rv = read_version.get(attempt)
            if job is not None and isinstance(rv, int):
                floor[job] = (rv, pair)
            continue
        if pair.invoke.f not in ("read", "create"):
            continue
        job = str(pair.value.get("job"))
        version = pair.value.get("version")
        if not isinstance(version, int):
            continue
        last = seen.get(job)
        if last is not None and version < last[0] and _invoked_after(pair, last[1]):
            found.violation(f"job {job}'s version went down from {last[0]} to {version}",
                            [last[1], pair])
        low = floor.get(job)
        if low is not None and pair.invoke.f == "read" and version <= low[0] \
                and _invoked_after(pair, low[1]):
            found.violation(f"job {job} is at version {version} after a claim that read "
                            f"version {low[0]} won", [low[1], pair])
        if last is None or version >= last[0]:
            seen[job] = (version, pair)
