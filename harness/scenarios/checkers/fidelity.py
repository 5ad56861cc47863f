"""Replay fidelity: a retry after completion gets the same job and says it is a replay; a
replayed server error follows the profile's declared error policy.

"Identical" is decided by the fingerprint the runner wrote: canonical JSON by default (reordered
keys, ``1`` vs ``1.0`` and whitespace are the same intent), the exact bytes when the profile
declares ``fingerprint: bytes``. So a service that hashes the raw body fails here unless it says
so in its profile — and then a re-serialised body with the same key must be *rejected*, which
``mismatch_rejected_unchanged`` and ``one_job_per_intent`` judge.
"""

from __future__ import annotations

from harness.scenarios.checkers.base import EvidenceNeed, Findings, checker, of, ok
from harness.scenarios.checkers.liveness import BUSY_ERRORS, after_failures, retries_answered
from harness.scenarios.history import Pair


def _identical_retries(items: list[Pair]) -> list[tuple[Pair, Pair]]:
    """(the first served create, a later identical create invoked after it completed)."""
    creates = of(items, "create")
    out = []
    for index, retry in enumerate(creates):
        v = retry.invoke.value
        same = (v["owner"], v["key"], v["fingerprint"])
        first = next((p for p in creates[:index] if ok(p) and p.completion is not None
                      and p.completion.index < retry.invoke.index
                      and (p.invoke.value["owner"], p.invoke.value["key"],
                           p.invoke.value["fingerprint"]) == same), None)
        if first is not None:
            out.append((first, retry))
    return out


@checker("an identical retry after completion gets the same job and says it is a replay "
         "({replay_mark}), never a conflict or a new job",
         EvidenceNeed("identical retry after completion, answered",
                  lambda items: sum(r.type != "info" for _, r in _identical_retries(items))))
def identical_retry_replayed(items: list[Pair], found: Findings) -> None:
    for first, retry in _identical_retries(items):
        v = retry.invoke.value
        who, job = f"{v['owner']}'s {v['key']!r}", first.value.get("job")
        value = retry.value
        if retry.type == "info":
            found.unknown(f"op {retry.invoke.index}: a retry of {who} got no answer")
        elif retry.type == "fail":
            if value.get("error") == "idempotency_key_reused":
                found.violation(f"an identical retry of {who} after completion was rejected as a "
                                f"different payload ({value.get('status')})", first, retry,
                                kind="rejected")
            elif value.get("error") not in BUSY_ERRORS:
                found.violation(f"an identical retry of {who} after completion was answered "
                                f"{value.get('status')} {value.get('error')} instead of job {job}",
                                first, retry, kind="refused")
        elif value.get("job") != job:
            found.violation(f"an identical retry of {who} after completion made another job "
                            f"({value.get('job')}, not {job})", first, retry, kind="another_job")
        elif "replayed" not in value:
            if found.terms.get("replay") == "unmarked":
                continue  # replays look like creations: the same job is all there is to judge
            found.unknown("the target does not say whether an answer is a replay",
                          "declare replay_header: (or replay:) in the target profile")
        elif not value["replayed"]:
            found.violation(f"an identical retry of {who} after completion got job {job} without "
                            "saying it is a replay (no replay header)", first, retry,
                            kind="unmarked")


@checker("a replayed server error follows the profile's error policy: 'retry' lets the retry "
         "run again, 'final' answers the same failure again",
         EvidenceNeed("retry after a handler failure, answered", retries_answered))
def error_replay_follows_policy(items: list[Pair], found: Findings) -> None:
    for case in after_failures(items, found):
        policy = case.fault.invoke.value.get("policy")
        owner, key = case.failed.invoke.value["owner"], case.failed.invoke.value["key"]
        status = case.failed.value.get("status")
        if policy is None:
            found.unknown("the target declares no error policy",
                          "declare on_handler_error: retry | final in the target profile")
            continue
        for retry in case.retries:
            value = retry.value
            if retry.type == "info" or value.get("error") in BUSY_ERRORS:
                continue  # no answer, or a stuck key: the liveness checkers report it
            if policy == "retry" and retry.type == "fail" and value.get("status") == status:
                marked = " and marked it a replay" if value.get("replayed") else ""
                found.violation(
                    f"the handler's {status} for {owner}'s key {key!r} was stored and answered "
                    f"again to the retry{marked}: the profile promises that a retry after a "
                    "handler error runs again (on_handler_error: retry)", case.failed, retry)
            elif policy == "final" and ok(retry):
                found.violation(
                    f"the retry of {owner}'s key {key!r} ran again and got job "
                    f"{value.get('job')}: the profile promises that a handler error is final "
                    f"(on_handler_error: final; expected {status} again)", case.failed, retry)
