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
completed                 the intent ends with a provider's whole answer (failover happened)
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
from harness.drill.causes import NO_TIMEOUT, SLOW_JOB, SLOW_LOOKS, UNSTARTED
from harness.drill.drills import HELD_LOOKS, Drill
from harness.drill.evidence import Call, IntentEvidence, Observation
from harness.drill.findings import ONE_JOB, Finding, IntentVerdict
from harness.drill.winner import SLOW_FIX, judge_winner, near_timeout, short, signed
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
        _completed(ev, drill, chat, setup.section.timeouts.backstop, winner),
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
        if not _timed_out(ev):  # the gateway took the slow primary's answer: no timeout drilled
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
    if not _timed_out(ev):
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


def _timed_out(ev: IntentEvidence) -> bool:
    """Evidence that the service acted on the primary's timeout: it called a fallback, gave up
    on the primary (abandoned, late), or said itself the job's outcome is unknown."""
    end = ev.budget_ended_at  # a call asked after the drill released the intent's calls is
    own = [c for c in ev.calls if end is None or c.at <= end]  # the release's doing
    return (any(c.role == "fallback" for c in own)
            or any(c.role == "primary" and c.outcome in ("abandoned", "late") for c in own)
            or any(o.status == "unknown" for o in ev.observations))


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


def _completed(ev: IntentEvidence, drill: Drill, chat: bool, cut: float,
               winner: Call | None) -> Finding:
    if chat:
        sub = ev.submissions[-1]
        if sub.status == 200 and sub.stream_complete is not False:
            return Finding("completed", "held", "HTTP 200")
        got = (f"HTTP {sub.status}" if sub.status not in (None, 200) else
               "a stream cut short (HTTP 200, then no end of stream)" if sub.status == 200
               else sub.error or "no answer")
        gave_up = sub.ended_at if sub.status is None else None
        late = [] if gave_up is None else [
            (c.provider, c.ended_at) for c in ev.calls if c.role == "fallback"
            and c.outcome == "answered" and c.ended_at is not None and c.ended_at >= gave_up]
        if gave_up is not None and late:  # it did fail over, after the client's budget
            provider, answered = late[0]
            return Finding("completed", "broken", f"the client got {got} "
                           f"{gave_up - sub.at:.1f} s after it asked (the drill's budget: "
                           f"timeouts.job_s and the late primary's delay); {provider} "
                           f"answered at {answered - ev.started_at:.3f} s, after the "
                           "client had given up: failover slower than timeouts.job_s",
                           "raise timeouts.job_s if the service's retries and failover take "
                           "that long by design; on a loaded machine, a lower --concurrency")
        return Finding("completed", "broken", f"the primary failed as scripted and the client "
                       f"got {got}: failover did not happen")
    last: Observation | None = ev.observations[-1] if ev.observations else None
    if last is None:
        return Finding("completed", "unknown", "the job was never observed",
                       "check drill.observe (path, status_field)")
    if last.status == "succeeded":
        return (_after_budget(ev, drill, winner)
                or Finding("completed", "held", f"{last.raw_status!r}"))
    if last.status == "error":  # no verdict from an answer the drill could not read
        return Finding("completed", "unknown", f"the last look at the job got "
                       f"{last.error or 'no readable answer'}",
                       "check drill.observe (path, headers) against the service's API")
    if last.status == "failed" and drill.timeout:
        return Finding("completed", "not_applicable", "reported failed (see timeout_not_failure)")
    if last.status == "unrecognised":  # the profile cannot say whether it is done
        return Finding("completed", "unknown", f"the last look at the job got the status "
                       f"{last.raw_status!r}, which the profile does not list",
                       "list it under drill.observe.statuses (succeeded, failed, running or "
                       "unknown)")
    unread = _answers_near_timeout(ev, last, cut) or _provoked(ev, drill)
    if unread is not None:
        return unread
    why, fix = _not_completed(ev, last)
    return Finding("completed", "broken", f"the job ended {last.raw_status!r} "
                   f"({last.status}) within timeouts.job_s: {why}", fix)


#: the fix for a job slower than its budget
SLOW_JOB_FIX = ("raise timeouts.job_s if the service takes that long by design; on a loaded "
                "machine, a lower --concurrency")


def _after_budget(ev: IntentEvidence, drill: Drill, winner: Call | None) -> Finding | None:
    """The job showed complete only after the drill's budget ran out (the drill looked on for
    the calls asked in time). Judged by the answer that is the result (the winner; else the
    first answer). It came in time and was stored after: held (None). Its call was asked in
    time and it came after: a loaded machine may have slowed the service that much: unknown,
    the load's (drilled again). Its call was asked after, provoked by the drill's release of
    the intent's calls (a hung primary reset): :func:`_provoked`, else broken."""
    end = ev.budget_ended_at
    answered = sorted((c for c in ev.calls if c.outcome == "answered" and c.ended_at is not None),
                      key=lambda c: c.ended_at or 0.0)
    if end is None or not answered:
        return None
    c = winner if winner is not None and winner.ended_at is not None else answered[0]
    if (c.ended_at or 0.0) <= end:
        return None

    def at(t: float | None) -> str:
        return f"{(t or 0.0) - ev.started_at:.3f} s"

    if c.at <= end:
        return Finding("completed", "unknown", f"{SLOW_JOB}: {c.ident} was asked at {at(c.at)}, "
                       f"before the drill's budget ran out at {at(end)}, and answered at "
                       f"{at(c.ended_at)}; the job showed its answer after. A loaded machine "
                       "can slow a service that much, so whether it keeps timeouts.job_s is not "
                       "known", SLOW_JOB_FIX, SLOW_JOB)
    said = (f"the job completed only with {c.ident}'s answer, asked at {at(c.at)}, after the "
            f"drill's budget ran out at {at(end)} and it released the intent's calls")
    return _provoked(ev, drill, said) or Finding(
        "completed", "broken", f"{said}: failover did not happen within timeouts.job_s",
        SLOW_JOB_FIX)


def _provoked(ev: IntentEvidence, drill: Drill, said: str = "") -> Finding | None:
    """A timeout drill whose budget ran out before the service gave up on its primary (no
    fallback asked, no call given up, until the drill released the intent's calls): no timeout
    of its own, or too loaded to reach it, as ``timeout_not_failure`` says. Whatever the job
    did after the release (a failover the reset provoked, stored or not) says nothing of
    ``completed``: unknown (None: not so)."""
    if ev.budget_ended_at is None or not drill.timeout or _timed_out(ev):
        return None
    said = said or (f"the drill's budget ran out at {ev.budget_ended_at - ev.started_at:.3f} s "
                    "and it released the intent's calls")
    return Finding("completed", "unknown", f"{said}; the service had not given up on its "
                   "primary by then, so whether it fails over by itself within "
                   "timeouts.job_s is not known", "check timeouts.provider_s against the "
                   "service's timeout; a service too loaded to reach its timeout within "
                   "timeouts.job_s: a lower --concurrency", NO_TIMEOUT)


def _answers_near_timeout(ev: IntentEvidence, last: Observation, cut: float
                          ) -> Finding | None:
    """The job shows no result, and every answer of the intent was kept back by the drill or
    its fakes until near the service's own timeout (:func:`near_timeout`: held until the
    backstop, or waiting for a look as long): a loaded service may have timed out on the call
    as the answer went, and a timeout rightly leaves the job running. Whether it stores an
    answer it reads is not known (None: an answer went in time, or none came)."""
    answered = [c for c in ev.calls if c.outcome == "answered" and c.ended_at is not None]
    if last.status == "failed" or not answered or not all(near_timeout(c, cut)
                                                             for c in answered):
        return None
    c = answered[0]
    wait = ("waited for a look at the job" if c.waited is not None
            else "was held until the fakes' backstop" if c.freed == "backstop"
            else "was held and written late")
    return Finding("completed", "unknown", f"the job ended {last.raw_status!r} with no result, "
                   f"and the answer of {c.ident} {wait}: it went "
                   f"{(c.ended_at or c.at) - c.at:.3f} s after the call arrived, near the "
                   "service's own timeout, which may have cut the call first (a timeout leaves "
                   "the job running): whether the service stores an answer it reads is not known",
                   SLOW_FIX, SLOW_LOOKS)


def _not_completed(ev: IntentEvidence, last: Observation) -> tuple[str, str]:
    """Why a job was not done at its last look, from the calls: reported failed; an answer
    it had by then and did not show; an answer that came after the look; a provider still
    answering when the drill stopped; a fallback it left; or no fallback at all."""
    def at(t: float) -> str:
        return f"{t - ev.started_at:.3f} s"

    slow = SLOW_JOB_FIX
    answered = sorted((c.ended_at, c.provider) for c in ev.calls
                      if c.outcome == "answered" and c.ended_at is not None)
    if last.status == "failed":  # a drill without a timeout: the service gave up
        if answered:
            return (f"reported failed though {answered[0][1]} answered at {at(answered[0][0])}",
                    "store a provider's whole answer as the job's result")
        return ("reported failed: failover did not happen",
                "have the service call the fallback when the primary fails")
    if answered:
        ended, provider = answered[0]
        if ended < last.at:
            return (f"{provider} answered at {at(ended)} and the job showed no result by the "
                    f"last look, at {at(last.at)}: the service stored it late or not at all",
                    slow)
        return (f"{provider} answered only at {at(ended)}, after the last look at "
                f"{at(last.at)}: failover slower than timeouts.job_s", slow)
    open_calls = [c for c in ev.calls if c.ended_at is None or c.outcome == "in_flight"]
    if open_calls:
        return (f"{open_calls[-1].provider} was still answering when the drill stopped (asked "
                f"at {at(open_calls[-1].at)}): failover slower than timeouts.job_s", slow)
    fallbacks = [c for c in ev.calls if c.role == "fallback"]
    if fallbacks:
        left = fallbacks[-1]
        return (f"{left.provider} was asked at {at(left.at)} and the service left before it "
                f"answered ({left.outcome}): failover did not complete",
                "give the fallback's call the time it needs within timeouts.job_s")
    return ("no provider answered it and no fallback was asked: failover did not happen",
            "have the service call the fallback when the primary fails or times out")


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
