"""Checkers for attempts: timeouts stay unknown and block, the open-attempt bound, rule 8."""

from __future__ import annotations

import sys

from harness.scenarios.checkers.base import (
    EvidenceNeed,
    Findings,
    attempt_jobs,
    checker,
    jobs,
    of,
    ok,
)
from harness.scenarios.history import Pair

CLOSING = ("succeeded", "failed", "cancelled")


def _closes(items: list[Pair]) -> dict[str, list[Pair]]:
    """Attempt alias → the ok events that closed it (terminal states), in order."""
    found: dict[str, list[Pair]] = {}
    for pair in of(items, *CLOSING):
        if ok(pair):
            found.setdefault(str(pair.invoke.value["attempt"]), []).append(pair)
    return found


def _later_starts(items: list[Pair]) -> int:
    """Starts answered on a job that already had a started attempt."""
    first: dict[str, int] = {}
    count = 0
    for pair in of(items, "start"):
        job = str(pair.invoke.value.get("job"))
        if job in first and pair.type != "info" and pair.invoke.index > first[job]:
            count += 1
        if ok(pair) and pair.completion is not None:
            first.setdefault(job, pair.completion.index)
    return count


def _starts_after_completion(items: list[Pair]) -> int:
    done = _completed(items)
    return sum(1 for p in of(items, "start") if p.type != "info"
               and (d := done.get(str(p.invoke.value["job"]))) is not None
               and d.completion is not None and d.completion.index < p.invoke.index)


@checker("a timeout leaves the attempt unknown — never failed — the job running, and the "
         "attempt's slot held until it is resolved or cancelled",
         EvidenceNeed("timeout (an attempt's timed_out event answered)",
                  lambda items: sum(1 for p in of(items, "timed_out") if ok(p))))
def timeout_unknown_blocks(items: list[Pair], found: Findings) -> None:
    known = jobs(items)
    attempt_to_job = attempt_jobs(items)
    closes = _closes(items)
    for timeout in of(items, "timed_out"):
        if not ok(timeout):
            continue
        attempt = str(timeout.invoke.value["attempt"])
        state = timeout.value.get("state")
        if state != "unknown":
            found.violation(f"the timeout marked {attempt} {state!r}; a timeout is unknown, "
                            "never failed", timeout)
        start = timeout.completion.index if timeout.completion else timeout.invoke.index
        # A close that had not completed before the timeout was invoked may have taken effect
        # after it (explore overlaps them; over HTTP the answers may arrive in either order):
        # the attempt is surely unknown only until that close's invoke.
        resolved = [c for c in closes.get(attempt, [])
                    if c.completion is not None and c.completion.index > timeout.invoke.index]
        end = min((c.invoke.index for c in resolved), default=sys.maxsize)
        job = attempt_to_job.get(attempt)
        if job is None:
            continue
        within = [p for p in items if p.invoke.index > start and p.completion is not None
                  and p.completion.index < end and ok(p) and p.invoke.value.get("job") == job]
        for pair in within:
            if pair.invoke.f == "read" and pair.value.get("status") in ("failed", "pending"):
                found.violation(f"while {attempt} was unknown, job {job} read "
                                f"{pair.value.get('status')!r}; it must stay running",
                                [timeout, pair])
            elif pair.invoke.f == "attempts":
                for entry in pair.value.get("attempts", []):
                    if entry.get("attempt") == attempt and entry.get("state") != "unknown":
                        found.violation(f"while {attempt} was unknown, the attempt list showed "
                                        f"it {entry.get('state')!r}", [timeout, pair])
            elif pair.invoke.f == "start" and known.get(job, None) is not None \
                    and known[job].max_open_attempts == 1:
                found.violation(f"{pair.value.get('attempt')} started while {attempt} was "
                                "unknown: the gate must hold until it is resolved",
                                [timeout, pair])


@checker("at most one open attempt per job — two with an explicit hedge — until one is "
         "resolved (crashed and timed-out attempts stay open)",
         EvidenceNeed("second start on one job, answered", _later_starts))
def open_attempts_bounded(items: list[Pair], found: Findings) -> None:
    known = jobs(items)
    closes = _closes(items)
    starts = [p for p in of(items, "start") if ok(p) and p.value.get("attempt")]
    for start in starts:
        job = start.invoke.value["job"]
        cap = known[job].max_open_attempts if job in known else 1
        assert start.completion is not None
        blockers = []
        for other in starts:
            if other is start or other.invoke.value["job"] != job:
                continue
            assert other.completion is not None
            if other.completion.index > start.invoke.index:
                continue  # not yet open for sure when this start ran
            closed = any(c.invoke.index < start.completion.index
                         for c in closes.get(str(other.value["attempt"]), []))
            if not closed:
                blockers.append(other)
        if len(blockers) >= cap:
            names = ", ".join(str(b.value["attempt"]) for b in blockers)
            found.violation(f"{start.value['attempt']} opened on job {job} while {names} "
                            f"{'was' if len(blockers) == 1 else 'were'} still open (the policy "
                            f"allows {cap})", [*blockers, start])


def _completed(items: list[Pair]) -> dict[str, Pair]:
    """Job alias → the first op that showed it succeeded (a won claim, or a read)."""
    attempt_to_job = attempt_jobs(items)
    completed: dict[str, Pair] = {}
    for pair in items:
        if not ok(pair) or pair.completion is None:
            continue
        if pair.invoke.f == "succeeded" and pair.value.get("outcome") == "won":
            job = attempt_to_job.get(str(pair.invoke.value["attempt"]))
        elif pair.invoke.f == "read" and pair.value.get("status") == "succeeded":
            job = str(pair.invoke.value["job"])
        else:
            continue
        if job is not None:
            held = completed.get(job)
            if held is None or held.completion is None or \
                    pair.completion.index < held.completion.index:
                completed[job] = pair
    return completed


@checker("a job that succeeded refuses new attempts (409 job_completed)",
         EvidenceNeed("start on a job that had succeeded, answered", _starts_after_completion))
def completed_job_refuses_attempts(items: list[Pair], found: Findings) -> None:
    completed = _completed(items)
    for start in of(items, "start"):
        done = completed.get(str(start.invoke.value["job"]))
        if done is None or done.completion is None or done.completion.index > start.invoke.index:
            continue
        if ok(start):
            found.violation(f"{start.invoke.value['attempt']} started on job "
                            f"{start.invoke.value['job']}, which had already succeeded",
                            [done, start])
        elif start.type == "fail" and start.value.get("error") != "job_completed":
            found.violation(f"a start on a succeeded job was answered "
                            f"{start.value.get('error')}, not job_completed", [done, start])
