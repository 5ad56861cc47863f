"""Liveness: a key is never refused forever, and never held "in progress" past its lease.

After a ``fault: handler_error`` step, the next create fails in the target's handler (a 5xx);
every later create with the same owner, key and intent is a *retry*. A retry must eventually be
served — the handler runs again, or the same terminal failure is answered (which one the profile
promises is :mod:`fidelity`'s concern) — never "in progress" until the engine gives up (it asks
for twice the profile's lease). Independently, any create that was told "in progress" later than
the profile's ``lease_s`` after it was first sent shows a key held past its lease; the report
says for how long. ``lease_s: none`` (no expiry) leaves no lease to exceed: the duplicates are
judged on their answers and the counter, and a key still held when the engine stops asking after
a failure is reported held forever.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.scenarios.checkers.base import EvidenceNeed, Findings, checker, of, ok
from harness.scenarios.history import Pair

BUSY_ERRORS = ("still_in_progress", "still_locked")


@dataclass(frozen=True, slots=True)
class AfterFailure:
    """A handler fault, the request it made fail, and the retries of that request."""

    fault: Pair
    failed: Pair
    retries: list[Pair]


def after_failures(items: list[Pair], found: Findings | None = None) -> list[AfterFailure]:
    """Each armed fault with its failed create and the retries after it (unknown when the fault
    was not armed or the next create did not fail)."""
    found = found if found is not None else Findings()
    out = []
    creates = of(items, "create")
    for fault in of(items, "fault"):
        if not ok(fault):
            found.unknown(f"op {fault.invoke.index}: the handler fault could not be armed "
                          f"({fault.value.get('status')} {fault.value.get('error')})",
                          "check the profile's faults: (the endpoint or command that makes the "
                          "next request fail)")
            continue
        later = [p for p in creates if p.invoke.index > fault.invoke.index]
        if not later:
            continue
        failed = _victim(later)
        if failed.type != "fail" or not isinstance(failed.value.get("status"), int) \
                or failed.value["status"] < 500:
            found.unknown(f"op {failed.invoke.index}: the create after the fault did not fail "
                          f"with a 5xx ({failed.type} {failed.value.get('status')}): the fault "
                          "did not reach the handler",
                          "check that the profile's fault makes the service's next request fail")
            continue
        same = (failed.invoke.value["owner"], failed.invoke.value["key"],
                failed.invoke.value["fingerprint"])
        assert failed.completion is not None
        done = failed.completion.index
        retries = [p for p in later if p is not failed and p.invoke.index > done and (
            p.invoke.value["owner"], p.invoke.value["key"], p.invoke.value["fingerprint"]) == same]
        out.append(AfterFailure(fault, failed, retries))
    return out


def _victim(later: list[Pair]) -> Pair:
    """The create the fault made fail: the first sent after it — or, when creates were sent
    concurrently with that one (a race, an arrival pattern), the one that failed with a 5xx: the
    fault fails whichever handler runs first, not necessarily the first request sent."""
    first = later[0]
    if first.completion is None:
        return first
    concurrent = [p for p in later if p.invoke.index < first.completion.index]
    return next((p for p in concurrent if p.type == "fail"
                 and isinstance(p.value.get("status"), int) and p.value["status"] >= 500), first)


def retries_answered(items: list[Pair]) -> int:
    return sum(r.type != "info" for case in after_failures(items) for r in case.retries)


@checker("after the handler fails, a retry with the same key is eventually served (run again, "
         "or answered the same terminal failure), never refused forever",
         EvidenceNeed("retry after a handler failure, answered", retries_answered))
def retry_after_failure_served(items: list[Pair], found: Findings) -> None:
    for case in after_failures(items, found):
        owner, key = case.failed.invoke.value["owner"], case.failed.invoke.value["key"]
        lease = case.fault.invoke.value.get("lease_ms")
        # The first retry that was served decides: a key refused for a while and then served
        # was not stuck (how long it was held is in_progress_within_lease's to judge).
        served = next((r for r in case.retries
                       if r.type != "info" and r.value.get("error") not in BUSY_ERRORS), None)
        if served is None:
            stuck = [r for r in case.retries if r.value.get("error") in BUSY_ERRORS]
            if not stuck:
                if case.retries:
                    found.unknown(f"op {case.retries[0].invoke.index}: no retry after the "
                                  "handler failure got an answer")
                continue
            last = stuck[-1]
            value = last.value
            asked = sum((value.get("busy") or {}).values())
            forever = " (the profile declares lease_s: none: it is held forever)"
            found.violation(
                f"after the handler failed, {owner}'s key {key!r} was still held in progress "
                f"{value.get('busy_ms', 0):g} ms later"
                + (forever if lease == "none" else f" (lease {lease} ms)" if lease is not None
                   else "")
                + (f": the retry was refused {asked} times" if len(stuck) == 1 else
                   f": all {len(stuck)} retries were refused (the last one {asked} times)")
                + " — the key is stuck", case.failed, stuck)
        elif served.type == "fail" and \
                served.value.get("status") != case.failed.value.get("status"):
            found.violation(
                f"after the handler failed ({case.failed.value.get('status')}), the first served "
                f"retry of {owner}'s key {key!r} was answered {served.value.get('status')} "
                f"{served.value.get('error')}: neither run again nor the same failure",
                case.failed, served)


@checker("no key is held in progress past the profile's lease: a duplicate told 'in progress' "
         "later than lease_s after it was first sent shows a stuck key")
def in_progress_within_lease(items: list[Pair], found: Findings) -> None:
    for pair in of(items, "create"):
        value = pair.value
        if not value.get("busy"):
            continue
        lease = value.get("lease_ms")
        if lease == "none":
            continue  # no expiry: nothing to exceed (a stuck key is retry_after_failure_served's)
        if lease is None:
            found.unknown("the profile declares no lease_s: how long a key may stay in progress "
                          "is unknown", "declare lease_s: in the target profile (the longest a "
                          "key may be held in progress, from the service's documentation)")
            return
        if value.get("busy_ms", 0) > lease:
            v = pair.invoke.value
            found.violation(f"{v['owner']}'s key {v['key']!r} was held in progress for at "
                            f"least {value['busy_ms']:g} ms (from the first 'in progress' answer "
                            f"to the sending of the last), past the lease of {lease} ms", pair)
