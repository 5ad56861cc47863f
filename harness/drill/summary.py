"""From judged intents to the drill's events: a rate per promise, and for each failing or
unknown intent its findings and its lane diagram (each provider call from start to end and how
it ended, the job's observed states, the winner)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.domain.verdicts import FINDING_WORD, JUDGED_WORD, Verdict
from harness.domain.words import of
from harness.drill.again import tally, why
from harness.drill.drills import DRILLS
from harness.drill.engine import DrillResults
from harness.drill.events import (
    DrilledAgain,
    DrilledIntent,
    DrillFinding,
    DrillRun,
    PromiseRate,
)
from harness.drill.evidence import Call, IntentEvidence
from harness.drill.findings import PROMISES, IntentVerdict
from harness.scenarios.events import Lane, Timeline, TimelineEvent, Unknown

MAX_INTENTS_SHOWN = 5



@dataclass(frozen=True)
class IntentRecord:
    """One judged intent, as its drill's event needs it (a shard records them for ``merge``,
    its verdict in the published words)."""

    PUBLISHED: ClassVar[dict[str, dict[Verdict, str]]] = {"verdict": JUDGED_WORD}
    trial: int
    verdict: Verdict
    findings: tuple[tuple[str, str, str, str], ...]  # (promise, verdict, message, fix), in order
    shown: DrilledIntent | None  # a failing or unknown intent, as the report shows it
    calls: int = 0
    billed: int = 0
    retries: int = 0
    retries_with_key: int = 0
    wall_s: float = 0.0
    #: why each intent it replaced was drilled again (the load left it without evidence)
    again: tuple[str, ...] = ()


@dataclass(frozen=True)
class DrillHead:
    """What a drill's event says before any intent: names and the command that drills it."""

    drill: str
    target: str
    profile: str
    command: str


def drill_events(results: DrillResults, command: Callable[[str], str]) -> list[DrillRun]:
    """One event per drill, in the order the drills ran."""
    return [drill_run(head(results, name, command(name)), records(verdicts))
            for name, verdicts in results.verdicts.items()]


def head(results: DrillResults, name: str, command: str) -> DrillHead:
    return DrillHead(name, results.target, results.profile, command)


def records(verdicts: list[IntentVerdict]) -> list[IntentRecord]:
    return [IntentRecord(
        trial=v.evidence.trial, verdict=v.verdict,
        findings=tuple((f.promise, f.verdict, f.message, f.fix) for f in v.findings),
        shown=_intent(v) if v.verdict != "pass" else None,
        calls=len(v.evidence.calls), billed=sum(c.billed for c in v.evidence.calls),
        retries=v.retries[0], retries_with_key=v.retries[1],
        wall_s=v.evidence.ended_at - v.evidence.started_at,
        again=tuple(why(e) for e in v.earlier)) for v in verdicts]


def drill_run(head: DrillHead, intents: list[IntentRecord], *,
              shard_order: bool = False) -> DrillRun:
    """A drill's event judged from its intents' records (``shard_order``: put them in trial
    order first, as one run has them)."""
    if shard_order:
        intents = sorted(intents, key=lambda r: r.trial)
    promises = tuple(_rate(p, intents) for p in PROMISES)
    bad = [r for r in intents if r.verdict != "pass"]
    verdict: Verdict = ("fail" if any(r.verdict == "fail" for r in intents)
                        else "unknown" if bad or not intents else "pass")
    unknowns = list(dict.fromkeys((message, fix) for r in intents
                                  for (_, said, message, fix) in r.findings
                                  if said == "unknown"))
    if not intents:
        unknowns.append(("no intent was drilled", "ask for --trials 1 or more"))
    return DrillRun(
        drill=head.drill, target=head.target, verdict=verdict, outcome=verdict,
        description=DRILLS[head.drill].description, profile=head.profile,
        trials=len(intents), promises=promises,
        intents=tuple(r.shown for r in bad[:MAX_INTENTS_SHOWN] if r.shown is not None),
        unknowns=tuple(Unknown(reason, fix) for (reason, fix) in unknowns[:3]),
        command=head.command, provider_calls=sum(r.calls for r in intents),
        billed_calls=sum(r.billed for r in intents),
        retries=sum(r.retries for r in intents),
        retries_with_key=sum(r.retries_with_key for r in intents),
        wall_s=max((r.wall_s for r in intents), default=0.0),
        drilled_again=tuple(DrilledAgain(reason, n) for reason, n
                            in tally(a for r in intents for a in r.again)),
    )


def _rate(promise: str, intents: list[IntentRecord]) -> PromiseRate:
    counts = {"held": 0, "broken": 0, "unknown": 0, "not_applicable": 0}
    examples: dict[str, str] = {}  # the first intent's message of each verdict
    for r in intents:
        f = next((f for f in r.findings if f[0] == promise), None)
        kind = f[1] if f is not None else "not_applicable"
        counts[kind] += 1
        if f is not None:
            examples.setdefault(kind, f[2])
    # the example says what the line says: a broken intent's evidence when any broke
    example = examples.get("broken") or examples.get("unknown", "")
    judged = counts["held"] + counts["broken"] + counts["unknown"]
    if counts["broken"]:
        text = f"broken in {of(counts['broken'], judged, 'intent')}"
    elif counts["unknown"]:
        text = f"unknown in {of(counts['unknown'], judged, 'intent')}"
    elif judged:
        text = f"held in {of(judged, judged, 'intent')}"
    else:
        text = "not judged here"
    return PromiseRate(promise, PROMISES[promise], counts["held"], counts["broken"],
                       counts["unknown"], counts["not_applicable"], text, example)


def _intent(v: IntentVerdict) -> DrilledIntent:
    ev = v.evidence
    return DrilledIntent(
        tag=ev.tag, trial=ev.trial, verdict=v.verdict,
        findings=tuple(DrillFinding(f.promise, f.verdict, f.message, f.fix)
                       for f in v.findings if f.verdict != "not_applicable"),
        winner=v.winner, answered_by=v.answered_by,
        calls=tuple(_call_line(ev, c) for c in range(len(ev.calls))),
        retries=v.retries[0], retries_with_key=v.retries[1],
        timeline=lanes(ev, v.winner), note="; ".join(filter(None, (ev.note, _again(v)))))


def _again(v: IntentVerdict) -> str:
    """The intents this one replaced, and why each was drilled again."""
    if not v.earlier:
        return ""
    return "drilled again in place of " + ", ".join(f"{e.evidence.tag} ({why(e)})"
                                                    for e in v.earlier)


def intent_json(v: IntentVerdict) -> dict[str, Any]:
    """Every count of one intent, for ``drill.json`` (what the gateway drill always wrote)."""
    ev = v.evidence
    first = ev.submissions[0] if ev.submissions else None
    calls: dict[str, int] = {}
    outcomes: dict[str, list[str]] = {}
    for c in ev.calls:
        calls[c.provider] = calls.get(c.provider, 0) + 1
        outcomes.setdefault(c.provider, []).append(c.outcome)
    return {
        "request": ev.tag, "trial": ev.trial, "verdict": JUDGED_WORD[v.verdict],
        "client_status": first.status if first else None,
        "client_error": (first.error or None) if first else None,
        "client_wait_s": round((first.ended_at or ev.ended_at) - first.at, 3) if first else None,
        "stream_complete": first.stream_complete if first else None,
        "answered_by": v.answered_by, "winner": v.winner, "provider_calls": len(ev.calls),
        "calls": calls, "outcomes": outcomes, "billed_completions": sum(c.billed for c in ev.calls),
        "late_primary_answer": _late(ev), "retries": v.retries[0],
        "retries_with_idempotency_key": v.retries[1], "note": ev.note or None,
        "wall_s": round(ev.ended_at - ev.started_at, 3),
        "drilled_again": [{"request": e.evidence.tag, "why": why(e),
                           "wall_s": round(e.evidence.ended_at - e.evidence.started_at, 3)}
                          for e in v.earlier],
        "findings": {f.promise: {"verdict": FINDING_WORD[f.verdict], "message": f.message,
                                 **({"fix": f.fix} if f.fix else {}),
                                 **({"load": f.load} if f.load else {})}
                     for f in v.findings},
    }


def _late(ev: IntentEvidence) -> str | None:
    """A scripted late primary's answer: "delivered and billed", "billed, not delivered"."""
    late = [c for c in ev.calls if c.role == "primary"
            and (c.held or c.behaviour.startswith("slow:"))]
    if any(c.outcome == "answered" for c in late):
        return "delivered and billed"
    return "billed, not delivered" if any(c.billed for c in late) else None


#: how a call's wait for a look at the job ended (it came after an answer of its intent)
WAITED = {"drill": "let go after a look", "backstop": "let go at the backstop, unseen",
          "left": "the service left first"}


def _call_line(ev: IntentEvidence, i: int) -> str:
    c = ev.calls[i]
    end = (f"{c.outcome} at {c.ended_at - ev.started_at:.3f} s" if c.ended_at is not None
           else "still open")
    billed = "billed" if c.billed else "not billed"
    waited = f", after an answer: waited for a look ({WAITED[c.waited]})" if c.waited else ""
    return (f"{c.ident} ({c.role}, scripted {_scripted(c)}) started at "
            f"{c.at - ev.started_at:.3f} s, {end}, {billed}{waited}")


def _scripted(c: Call) -> str:
    return f"{c.behaviour}, held" if c.held else c.behaviour


def lanes(ev: IntentEvidence, winner: str | None) -> Timeline:
    """The intent's lane diagram: the job (or the client), then one lane per provider call."""
    t0 = ev.started_at
    marks = [TimelineEvent(round(s.at - t0, 4), "submitted", f"HTTP {s.status}"
                           + (f" job {s.job_id}" if s.job_id else "")) for s in ev.submissions]
    last = None
    for o in ev.observations:
        if o.status != last:
            result = f" {o.result[:40]}" if o.result else ""
            marks.append(TimelineEvent(round(o.at - t0, 4), o.status,
                                       f"{o.raw_status}{result}"))
            last = o.status
    for s in ev.submissions:
        if s.ended_at is not None and not ev.observations:
            marks.append(TimelineEvent(round(s.ended_at - t0, 4), "result", s.result or s.error))
    if ev.observations:
        marks.append(TimelineEvent(round(ev.observations[-1].at - t0, 4), "observed",
                                   ev.observations[-1].raw_status or ""))
    rows = [Lane("job" if ev.observations else "client", events=tuple(marks),
                 outcome=last or None)]
    for c in ev.calls:
        ended = c.ended_at if c.ended_at is not None else ev.ended_at
        events = (TimelineEvent(round(c.at - t0, 4), "started", _scripted(c)),
                  TimelineEvent(round(ended - t0, 4), c.outcome,
                                "billed" if c.billed else "not billed"))
        rows.append(Lane(f"{c.ident} ({_scripted(c)})", c.role, events,
                         "won" if c.ident == winner else c.outcome))
    return Timeline(duration=round(max(ev.ended_at - t0, 0.001), 4), lanes=tuple(rows))
