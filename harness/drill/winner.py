"""``one_winner_per_job``: which call's answer is the intent's result (the fakes sign every
answer), whether it ever changed, and whether every other answer that reached the service and
lost its claim was recorded among its races. Pure; part of :mod:`harness.drill.judge`."""

from __future__ import annotations

from harness.domain.words import counted
from harness.drill.causes import LATE_UNREACHED, SLOW_LOOKS
from harness.drill.evidence import Call, IntentEvidence
from harness.drill.findings import ONE_WINNER, Finding
from harness.providers.received import SIGNATURE
from harness.target.drill_section import DrillSection

SLOW_FIX = ("the looks at the job were slow: drill with a lower --concurrency or on a less "
             "loaded machine")


def signed(text: str | None) -> list[tuple[str, int]]:
    """The (fake, call number) signatures in an answer's text."""
    return [(m.group(1), int(m.group(2))) for m in SIGNATURE.finditer(text or "")]


def judge_winner(ev: IntentEvidence, section: DrillSection, chat: bool
                 ) -> tuple[Call | None, Finding]:
    """The call whose answer is the intent's result, and ``one_winner_per_job``."""
    field_name = ("submit.result_field" if chat else "observe.result_field")
    if chat:  # each click of a chat call has its own answer: the first one is the intent's
        results = [(s.ended_at or s.at, s.result) for s in ev.submissions[:1]
                   if s.status == 200 and s.stream_complete is not False]
    else:
        results = [(o.at, o.result) for o in ev.observations if o.status == "succeeded"]
    if not results:
        return None, Finding(ONE_WINNER, "not_applicable", "no complete result was observed")
    first_at, first = results[0]
    changed = next(((t, r) for t, r in results[1:] if r != first), None)
    calls = {c.ident: c for c in ev.calls}
    signatures = signed(first)
    if not signatures:
        return None, Finding(ONE_WINNER, "unknown", f"the result {short(first)!r} does not "
                             "say whose answer it is", f"keep the provider's answer text in "
                             f"{field_name} (the drill's fakes sign every answer)")
    winner = calls.get(f"{signatures[0][0]}#{signatures[0][1]}")
    if winner is None or len(set(signatures)) > 1:
        return None, Finding(ONE_WINNER, "broken", f"the result {short(first)!r} is not one "
                             "call of this intent (another intent's answer, or two answers)")
    if changed is not None:
        return winner, Finding(ONE_WINNER, "broken", f"the result changed "
                               f"{changed[0] - first_at:.3f} s after it was complete: from "
                               f"{winner.ident}'s answer to {short(changed[1])!r}")
    # a look the drill could not read (no answer, not JSON) is not what the service reported
    read = [o for o in ev.observations if o.status != "error"]
    if not chat and read and read[-1].status != "succeeded":
        return winner, Finding(ONE_WINNER, "broken", f"complete with {winner.ident}'s answer, "
                               f"then reported {read[-1].raw_status!r}")
    answered = [c for c in ev.calls if c.outcome == "answered" and c is not winner]
    late = [c for c in answered
            if c.ended_at is not None and c.ended_at > (winner.ended_at or 0)]
    lost = _lost_claim(ev, section, winner, answered, late)
    if lost is not None:
        return winner, lost
    held = [c for c in ev.calls if c.role == "primary" and c.held and c is not winner]
    if held and not late and not any(c.outcome == "answered" for c in held):
        # no evidence: the late answer the drill is about never reached the service
        return winner, Finding(ONE_WINNER, "unknown", f"the late answer of {held[0].ident} "
                               f"never reached the service (the call ended {held[0].outcome} "
                               "before the drill let the answer go, after the fallback won), "
                               "so a late answer after the winner was not tried",
                               "let the service wait on its primary longer than its fallback "
                               "takes to answer, or drill with a lower --concurrency",
                               LATE_UNREACHED)
    unseen = _left_while_held(ev, winner) or _unlooked(ev, section, winner)
    if unseen is not None:
        return winner, unseen
    note = f"; late answer of {late[0].ident} discarded" if late else ""
    return winner, Finding(ONE_WINNER, "held", f"{winner.ident}'s answer, unchanged over "
                           f"{counted(len(results), 'observation')}{note}")


def _left_while_held(ev: IntentEvidence, winner: Call) -> Finding | None:
    """A call whose answer the drill held and the service left first, before the drill or the
    fakes' backstop let it go, after which the service asked the same question again and that
    call's answer became the result: the hold kept an answer from the service that it would
    have had at once, and the service asked again because of it (seen under load, the fake
    seeing the call arrive late: the service's own timeout came before the backstop). Whether
    the service keeps one winner when both answers reach it is not known."""
    c = next((c for c in ev.calls if c.held and c.freed == "left" and c is not winner
              and c.prompt and c.prompt == winner.prompt and c.ended_at is not None
              and c.ended_at <= winner.at), None)
    if c is None or c.ended_at is None:
        return None
    return Finding(ONE_WINNER, "unknown", f"the drill held {c.ident}'s answer and the service "
                   f"left the call first, {c.ended_at - c.at:.3f} s after it arrived (the fakes' "
                   "backstop lets a held answer go at three quarters of timeouts.provider_s), "
                   f"then asked again: {winner.ident}'s answer is the result. The hold changed "
                   "what the service did, so whether it keeps one winner when both answers "
                   "reach it is not known", SLOW_FIX + ", or set timeouts.provider_s to the "
                   "service's own provider timeout", SLOW_LOOKS)


def _unlooked(ev: IntentEvidence, section: DrillSection, winner: Call) -> Finding | None:
    """An answer after an earlier answer of the intent (a re-run's, a redelivery's, a second
    attempt's) waits for a look at the job before it goes, so that a result shown before it is
    seen; when the fakes' backstop let it go first, a first result it replaced may have been
    missed. When the service left such a call after the winner's answer as late as the
    backstop's three quarters of ``timeouts.provider_s`` or later, the wait outlasted the
    backstop (a loaded machine) and met the service's own timeout: the answer never reached it,
    so what it would have done with a second answer is not known."""
    call = next((c for c in ev.calls if c.waited == "backstop" and c.outcome == "answered"),
                None)
    if call is not None:
        return Finding(ONE_WINNER, "unknown", f"{call.ident}'s answer came after an earlier "
                       "answer of the intent, and the fakes let it go at their backstop (three "
                       "quarters of timeouts.provider_s after the call arrived) before a look at "
                       "the job saw what the earlier one did: a result shown before it may have "
                       "been missed", SLOW_FIX, SLOW_LOOKS)
    cut = section.timeouts.backstop
    left = next((c for c in ev.calls if c.waited == "left" and c is not winner
                 and c.at >= (winner.ended_at or 0) and (c.ended_at or 0) - c.at >= cut), None)
    if left is None:
        return None
    return Finding(ONE_WINNER, "unknown", f"{left.ident} came after the winner "
                   f"{winner.ident}'s answer and its answer waited for a look at the job; the "
                   f"service left the call {(left.ended_at or 0) - left.at:.3f} s after it "
                   "arrived, past the fakes' backstop (three quarters of timeouts.provider_s), "
                   "so the answer never reached it and whether it would have replaced the "
                   "result is not known", SLOW_FIX, SLOW_LOOKS)


def near_timeout(c: Call, cut: float) -> bool:
    """Whether the drill or its fakes kept the call's answer back until near the service's own
    timeout: it waited for a look and went at the backstop's three quarters of
    ``timeouts.provider_s`` or later, or it was held and the backstop, not the drill, let it
    go (or, for a held fallback, whoever let it go, it went that late: a loaded fake writes
    late). The service's clock starts before the fake sees the call, and a loaded service may
    read an answer that late after its timeout fired: that it reached the service is not
    known."""
    went = (c.ended_at or 0) - c.at
    if c.waited is not None:
        return went >= cut
    # a held fallback's backstop is at ``cut``: written that late, whoever let it go, it went
    # near the timeout; a late primary is held on purpose far longer (not near it then)
    return c.held and (c.freed == "backstop" or (c.role == "fallback" and went >= cut))


def short(text: str | None, limit: int = 80) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lost_claim(ev: IntentEvidence, section: DrillSection, winner: Call,
                answered: list[Call], late: list[Call]) -> Finding | None:
    """``one_winner_per_job`` from the answers that lost their claim, where the profile shows
    the service's races (None: nothing to say from them).

    An answer that reached the service after the winner, or before it to the same question (a
    retry's, a re-run's: another step of the job asks something else), and is not the result
    lost a claim: the service records it among its races. One the drill or its fakes kept back
    until near the service's own timeout (:func:`near_timeout`) may have met that timeout: the
    service may never have read it, so no race was owed."""
    lost = late + [c for c in answered if c not in late and c.prompt
                   and c.prompt == winner.prompt]
    if not lost or section.observe is None or section.observe.races is None:
        return None
    cut = section.timeouts.backstop
    sure = [c for c in lost if not near_timeout(c, cut)]
    sure_late = [c for c in late if c in sure]
    which = (f"the late answer of {sure_late[0].ident} reached the service after the winner"
             if sure_late
             else f"the answer of {sure[0].ident} reached the service before the winner "
             f"{winner.ident}'s, and the result was never seen to be it" if sure
             else f"the answer of {lost[0].ident} reached the service")
    if ev.races is None:
        return Finding(ONE_WINNER, "unknown", f"{which}, and the service did not answer the "
                       "list of races", "check drill.observe.races (path, items) against the "
                       "service's API")
    if ev.races:
        return None
    if sure:
        return Finding(ONE_WINNER, "broken", f"{which}, and no race was recorded"
                       + ("" if sure_late else " (it was overwritten too soon for a look to "
                          "see, or dropped without a record)"))
    c = lost[0]
    wait = ("was held until the fakes' backstop" if c.waited is None
            else "waited for a look at the job")
    return Finding(ONE_WINNER, "unknown", f"the answer of {c.ident} {wait} and went "
                   f"{(c.ended_at or 0) - c.at:.3f} s after the call arrived, near "
                   "the service's own timeout (timeouts.provider_s "
                   f"{section.timeouts.provider_s:g} s): the service may have given up on it "
                   "unread, so its lost claim is not known, and no race was recorded",
                   SLOW_FIX, SLOW_LOOKS)
