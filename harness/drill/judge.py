"""Judge one drilled intent: each promise held, broken (with the evidence) or unknown (with the
reason and the fix), from its :class:`~harness.drill.evidence.IntentEvidence`. Pure.

The promises (a closed vocabulary; docs/drill.md, "The promises"):

========================  ================================================================
one_job_per_intent        every submit of the intent names the same job
timeout_not_failure       while the primary merely hangs or is slow, the job is never "failed"
within_hedge              a call that starts while another call of the intent is unresolved
                          (its outcome not known to the service: running, or given up by the
                          service at its timeout) is a new attempt: at most the declared hedge
one_winner_per_job        the result is one provider call's answer, and never changes once
                          complete (a late answer is discarded, and recorded where shown)
no_call_after_completion  no provider call of the intent starts after the job was observed
                          complete (a redelivery, a re-run)
billed_within_bound       billed provider calls per intent ≤ policy.max_billed_calls
cut_not_success           a cut stream never reaches the client as a success
completed                 the intent ends with a provider's whole answer (failover happened;
                          :mod:`harness.drill.completion`)
fallback_certified        the fallback that answered is certified for the contract (the lock)
========================  ================================================================

``one_job_per_intent`` and ``one_winner_per_job`` are the scenarios' rules of the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from harness.domain.words import counted
from harness.drill import causes
from harness.drill.causes import NO_TIMEOUT, SLOW_LOOKS, UNSTARTED
from harness.drill.completion import completed, timed_out
from harness.drill.drills import HELD_LOOKS, Drill
from harness.drill.evidence import Call, IntentEvidence
from harness.drill.findings import ONE_JOB, Finding, IntentVerdict
from harness.drill.winner import judge_winner, short, signed
from harness.target.drill_section import DrillSection

#: (certified?, why) for a provider; None: no contract to judge against
Certifier = Callable[[str], tuple[bool, str] | None]


@dataclass(frozen=True, slots=True)
class Setup:
    """What the judge needs besides the evidence: the profile's section, where the fakes
    listen (name, kind, url) and the certifier."""

    section: DrillSection
    fakes: Sequence[tuple[str, str, str]]
    certify: Certifier | None = None
    target: str = ""  # the service's URL (for a cause that names it)


def judge_intent(ev: IntentEvidence, drill: Drill, setup: Setup) -> IntentVerdict:
    out = IntentVerdict(ev)
    cause = causes.undrillable(ev, drill, setup.fakes, setup.target)
    if cause is not None:
        out.findings.append(Finding("completed", "unknown", *cause,
                                    UNSTARTED if causes.unstarted(ev) else ""))
        return out
    chat = setup.section.submit.kind == "chat"
    winner, winner_finding = judge_winner(ev, setup.section, chat)
    out.winner = winner.ident if winner else None
    out.answered_by = answered_by(ev, setup, winner)
    out.findings += [
        _one_job(ev, chat),
        _timeout(ev, drill, chat),
        _hedge(ev, setup),
        winner_finding,
        _after_completion(ev, setup, chat),
        _billed(ev, setup),
        _cut(ev, drill, chat, winner),
        completed(ev, drill, chat, setup.section.timeouts.backstop, winner),
        _certified(winner, setup),
    ]
    return out


def mark_overload(verdicts: Sequence[IntentVerdict], concurrency: int) -> None:
    """Across a run's intents: when the drill's concurrency overloaded the service, the intents
    whose submit got no answer say so, and their fix names ``--concurrency``."""
    overload = causes.overloaded([v.evidence for v in verdicts], concurrency)
    if overload is None:
        return
    for v in verdicts:
        if causes.unanswered(v.evidence):
            v.findings = [replace(f, message=f.message + overload[0], fix=overload[1])
                          if f.verdict == "unknown" else f for f in v.findings]


def answered_by(ev: IntentEvidence, setup: Setup, winner: Call | None) -> str | None:
    """Which provider answered the client: the gateway's answer header naming a fake's URL
    (LiteLLM's ``x-litellm-model-api-base``), else the signature in the answer."""
    base = next((s.answered_base for s in ev.submissions if s.answered_base), None)
    if base:
        where = urlsplit(base)
        named = next((name for name, _kind, url in setup.fakes
                      if (urlsplit(url).hostname, urlsplit(url).port)
                      == (where.hostname, where.port)), None)
        said = f"{named or base} (the gateway's answer header)"
        if winner is not None and named != winner.provider:
            said += f"; the answer is signed by {winner.provider}"
        return said
    return f"{winner.provider} (its signed answer)" if winner is not None else None


def _one_job(ev: IntentEvidence, chat: bool) -> Finding:
    if chat:
        return Finding(ONE_JOB, "not_applicable", "a chat call creates no job")
    ids = list(dict.fromkeys(s.job_id for s in ev.submissions if s.job_id))
    if not ids:
        return Finding(ONE_JOB, "unknown", "no submit answered a job id",
                       "check drill.submit.id_field (where the job id is in the answer)")
    if len(ids) > 1:
        return Finding(ONE_JOB, "broken", f"{len(ev.submissions)} submits of one intent made "
                       f"{len(ids)} jobs: {', '.join(ids)}")
    return Finding(ONE_JOB, "held", f"{counted(len(ev.submissions), 'submit')}, one job {ids[0]}")


def _timeout(ev: IntentEvidence, drill: Drill, chat: bool) -> Finding:
    if not drill.timeout:
        return Finding("timeout_not_failure", "not_applicable",
                       "the primary does not time out here")
    if chat:
        bad = [s for s in ev.submissions if s.status is not None and s.status >= 400]
        if bad:
            return Finding("timeout_not_failure", "broken", f"the client got HTTP "
                           f"{bad[0].status} while the primary was merely silent")
        if not timed_out(ev):  # the gateway took the slow primary's answer: no timeout drilled
            return Finding("timeout_not_failure", "unknown", "the gateway never acted on its "
                           "timeout: no fallback call, the primary's call never given up, so "
                           "what it does after a timeout was not seen",
                           "check timeouts.provider_s against the gateway's timeout for one "
                           "provider call; a gateway too loaded to reach its timeout: a lower "
                           "--concurrency", NO_TIMEOUT)
        return Finding("timeout_not_failure", "held", "no error reached the client")
    failed = next((o for o in ev.observations if o.status == "failed"), None)
    if failed is not None:
        shown = (repr(failed.raw_status) if failed.raw_status == "failed" else
                 f"{failed.raw_status!r} (failed)")  # its own word, and what it means
        return Finding("timeout_not_failure", "broken", f"the job was reported "
                       f"{shown} at {failed.at - ev.started_at:.3f} s "
                       f"while the primary was merely {_silent(drill)}")
    if not ev.observations:
        return Finding("timeout_not_failure", "unknown", "the job was never observed",
                       "check drill.observe (path, status_field)")
    if not timed_out(ev):
        return Finding("timeout_not_failure", "unknown", f"the service never acted on its "
                       f"timeout while the drill watched ({counted(len(ev.observations), 'look')}"
                       f"): no fallback call, the primary never given up, the job never "
                       "'unknown', so what it shows after a timeout was not seen",
                       "check timeouts.provider_s against the service's timeout; a service too "
                       "loaded to reach its timeout within timeouts.job_s: a lower --concurrency",
                       NO_TIMEOUT)
    unseen = _unseen_hold(ev)
    if unseen is not None:
        return unseen
    return Finding("timeout_not_failure", "held", f"{len(ev.observations)} observations, "
                   "never failed")


def _unseen_hold(ev: IntentEvidence) -> Finding | None:
    """The fallback's answer was held so that the job is seen between the service's timeout and
    that answer; fewer than two looks in that window (the fakes let the answer go at their
    backstop, before the service's own timeout would cut the call; or the service left it):
    no evidence either way."""
    held = next((c for c in sorted(ev.calls, key=lambda c: c.at)
                 if c.role == "fallback" and c.held), None)
    if held is None:
        return None
    end = held.freed_at if held.freed_at is not None else held.ended_at
    looks = sum(1 for o in ev.observations if o.at > held.at
                and end is not None and (o.answered_at or o.at) <= end)
    if looks >= HELD_LOOKS:
        return None
    why = {"backstop": "the fakes let it go at their backstop, three quarters of "
                       "timeouts.provider_s after the call arrived, before the service's own "
                       "timeout would cut the call",
           "left": "the service left the call first"}.get(held.freed or "", "")
    span = f"{held.at - ev.started_at:.3f} s" + (
        f" to {end - ev.started_at:.3f} s" if end is not None else "")
    return Finding("timeout_not_failure", "unknown", f"the drill could not look twice while "
                   f"the fallback was held: {counted(looks, 'look')} at the job completed "
                   f"while {held.ident}'s answer was held ({span}){f': {why}' if why else ''}; "
                   "a failed status shown in between may have been missed",
                   "the looks at the job were slow: drill with a lower --concurrency or on a "
                   "less loaded machine, or with a longer provider timeout (the service's, and "
                   "timeouts.provider_s with it): the window is three quarters of it",
                   SLOW_LOOKS)


def _silent(drill: Drill) -> str:
    return "slow" if drill.name == "late" else "hanging"


def _hedge(ev: IntentEvidence, setup: Setup) -> Finding:
    """Unresolved is not ended: a call starting while another call of the intent is unresolved
    is a new attempt, allowed only as the declared hedge (one, not before ``after_s``)."""
    hedge = setup.section.policy.hedge
    tol = max(0.05, setup.section.timeouts.provider_s / 10)
    calls = sorted(ev.calls, key=lambda c: c.at)
    # measured from the submit (not the first call's arrival, which a loaded service's client
    # may delay): a lower bound on the service's own delay, so never a false alarm
    since = ev.submissions[0].at if ev.submissions else (calls[0].at if calls else 0.0)
    taken: Call | None = None  # the hedge, once one was started
    for i, c in enumerate(calls):
        unresolved = [d for d in calls[:i] if d.unresolved_at(c.at, tol)]
        if not unresolved:
            continue
        first = unresolved[0]
        at = f"call {c.ident} started at {c.at - ev.started_at:.3f} s while {first.ident} " \
             f"was unresolved ({_state(first, c.at, ev.started_at)})"
        if not hedge.allowed:
            return Finding("within_hedge", "broken", f"{at}: a new attempt, and the profile "
                           "declares no hedge")
        if taken is not None:
            return Finding("within_hedge", "broken", f"{at}: a second new attempt after the "
                           f"hedge {taken.ident} (the policy allows one; an SDK retry, a second "
                           "fallback or a redelivered run)")
        after = hedge.after_s or 0.0
        if c.at - since < after - tol:
            return Finding("within_hedge", "broken", f"{at}: the hedge started "
                           f"{c.at - since:.3f} s after the intent was submitted (declared "
                           f"after_s {after:g})")
        taken = c
    return Finding("within_hedge", "held", f"{counted(len(calls), 'call')}: "
                   + ", ".join(f"{c.ident} {c.outcome}" for c in calls)
                   + (f"; {taken.ident} the one hedge" if taken else ""))


def _state(call: Call, t: float, t0: float) -> str:
    """Why ``call`` was unresolved at ``t``: still running, or given up by the service."""
    if call.ended_at is None or call.ended_at > t:
        return "still running"
    return (f"{call.outcome} at {call.ended_at - t0:.3f} s: the service gave up on it, its "
            "outcome unknown")


def _completed_at(ev: IntentEvidence, chat: bool) -> float | None:
    """When the intent was first observed complete with a result (a chat call: when its answer
    came). A ``failed`` shown before a result is ``timeout_not_failure``'s (or ``completed``'s)
    matter, not a completion."""
    if chat:
        first = ev.submissions[0] if ev.submissions else None
        return first.ended_at if first is not None and first.status == 200 else None
    # when the answer came: a call that started later surely started after completion
    return next((o.answered_at or o.at for o in ev.observations if o.status == "succeeded"),
                None)


def _after_completion(ev: IntentEvidence, setup: Setup, chat: bool) -> Finding:
    done = _completed_at(ev, chat)
    if done is None:
        return Finding("no_call_after_completion", "not_applicable", "never observed complete")
    tol = max(0.05, setup.section.timeouts.provider_s / 10)
    later = [c for c in sorted(ev.calls, key=lambda c: c.at) if c.at > done + tol]
    # the service's own slowness then, as measured: the longest a look at the job waited for
    # its answer up to the completion. A call that arrives within it of the completion may have
    # been sent before the result (a loaded service's hedge, started while the job was open,
    # reaching the fake late): no evidence either way
    slow = max(((o.answered_at or o.at) - o.at for o in ev.observations if o.at <= done),
               default=0.0)
    sure = [c for c in later if c.at > done + tol + slow]
    if later and not sure:
        c = later[0]
        return Finding("no_call_after_completion", "unknown", f"call {c.ident} arrived "
                       f"{c.at - done:.3f} s after the job was observed complete at "
                       f"{done - ev.started_at:.3f} s, while the service took up to "
                       f"{slow:.3f} s to answer a look at the job: it may have been sent before "
                       "the result", "the looks at the job were slow: drill with a lower "
                       "--concurrency or on a less loaded machine", SLOW_LOOKS)
    if sure:
        c = sure[0]
        return Finding("no_call_after_completion", "broken", f"call {c.ident} started at "
                       f"{c.at - ev.started_at:.3f} s, {c.at - done:.3f} s after the job was "
                       f"observed complete at {done - ev.started_at:.3f} s (a hedge or fallback "
                       f"started after the result, a redelivery or a re-run)"
                       f"{f'; {len(sure)} such calls' if len(sure) > 1 else ''}",
                       "start a new attempt only while the job has no result: check and start "
                       "in one transaction, and never run a completed job again")
    return Finding("no_call_after_completion", "held", f"no call after "
                   f"{done - ev.started_at:.3f} s, watched until "
                   f"{ev.ended_at - ev.started_at:.3f} s")


def _billed(ev: IntentEvidence, setup: Setup) -> Finding:
    bound = setup.section.policy.max_billed_calls
    billed = [c for c in ev.calls if c.billed]
    timeline = ", ".join(f"{c.ident} {c.outcome}" + ("" if c.billed else " (not billed)")
                         for c in sorted(ev.calls, key=lambda c: c.at))
    later = sorted(ev.calls, key=lambda c: c.at)[1:]
    if later:
        timeline += (f"; {sum(c.keyed for c in later)} of {len(later)} retries carried an "
                     "idempotency key")
    if len(billed) > bound:
        return Finding("billed_within_bound", "broken", f"{len(billed)} billed calls for one "
                       f"intent (declared at most {bound}): {timeline}")
    return Finding("billed_within_bound", "held", f"{len(billed)} billed of {bound}: {timeline}")


def _cut(ev: IntentEvidence, drill: Drill, chat: bool, winner: Call | None) -> Finding:
    if drill.name != "stream-cut":
        return Finding("cut_not_success", "not_applicable", "no stream is cut here")
    if not any(c.outcome == "cut" for c in ev.calls):
        refused = sorted({str(c.status) for c in ev.calls
                          if c.role == "primary" and c.outcome == "refused"})
        if refused:
            return Finding("cut_not_success", "unknown", "no call was cut: the primary refused "
                           f"the service's request (HTTP {', '.join(refused)}) before any "
                           "stream began", "check the API key and the request body the "
                           "service sends the primary")
        return Finding("cut_not_success", "unknown", "no call was cut (the service never "
                       "reached the primary's stream)", "check the primary's role and port")
    if chat:
        done = [s for s in ev.submissions if s.status == 200 and s.stream_complete is not False]
        if done and winner is None:
            return Finding("cut_not_success", "broken", f"the client got HTTP 200 with "
                           f"{short(done[0].result)!r}: the cut answer, passed off as whole")
        return Finding("cut_not_success", "held", "the cut answer did not reach the client "
                       "as a success")
    ok = [o for o in ev.observations if o.status == "succeeded"]
    if ok and winner is None and not signed(ok[0].result):
        return Finding("cut_not_success", "broken", f"the job succeeded with "
                       f"{short(ok[0].result)!r}: the cut stream's first bytes")
    return Finding("cut_not_success", "held", "the cut stream did not complete the job")


def _certified(winner: Call | None, setup: Setup) -> Finding:
    if winner is None or winner.role != "fallback":
        return Finding("fallback_certified", "not_applicable", "no fallback answered")
    verdict = setup.certify(winner.provider) if setup.certify else None
    if verdict is None:
        return Finding("fallback_certified", "not_applicable", f"{winner.provider} answered; the "
                       "profile names no contract, so the lock was not consulted")
    ok, why = verdict
    return Finding("fallback_certified", "held" if ok else "broken",
                   f"{winner.provider}: {why}")
