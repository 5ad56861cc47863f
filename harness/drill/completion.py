"""The ``completed`` promise of one drilled intent (:mod:`harness.drill.judge`): does it end with
a provider's whole answer within ``timeouts.job_s``, and when the drill's budget ran out, what the
calls show (an answer stored late or not at all, one that came after, a failover the drill's
release provoked, an answer held until near the service's own timeout). And
:func:`timed_out`, the evidence that the service acted on its primary's timeout, which
``timeout_not_failure`` reads too. Pure.
"""

from __future__ import annotations

from functools import partial

from harness.drill.causes import NO_TIMEOUT, SLOW_JOB, SLOW_LOOKS
from harness.drill.drills import Drill
from harness.drill.evidence import Call, IntentEvidence, Observation
from harness.drill.findings import Finding
from harness.drill.winner import SLOW_FIX, near_timeout


def timed_out(ev: IntentEvidence) -> bool:
    """Evidence that the service acted on the primary's timeout: it called a fallback, gave up
    on the primary (abandoned, late), or said itself the job's outcome is unknown."""
    end = ev.budget_ended_at  # a call asked after the drill released the intent's calls is
    own = [c for c in ev.calls if end is None or c.at <= end]  # the release's doing
    return (any(c.role == "fallback" for c in own)
            or any(c.role == "primary" and c.outcome in ("abandoned", "late") for c in own)
            or any(o.status == "unknown" for o in ev.observations))


def completed(ev: IntentEvidence, drill: Drill, chat: bool, cut: float,
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


def _since(ev: IntentEvidence, t: float | None) -> str:
    """``t`` in seconds after the intent started, as the messages say it."""
    return f"{(t or 0.0) - ev.started_at:.3f} s"


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
    at = partial(_since, ev)
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
    if ev.budget_ended_at is None or not drill.timeout or timed_out(ev):
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
    at = partial(_since, ev)
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
