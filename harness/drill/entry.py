"""The drill's entry point: frozen settings in, typed events and a verdict out.

``run_drill(settings, folder=…, live=…)`` serves the profile's providers as fakes, probes the
service with one control intent (a service that never calls the fakes stops there: one unknown,
one diagnosis), drills every intent of every drill in one round, judges them, and yields the
``drill_run`` events (one per drill) and ``drill.json``, returning the run's verdict. No command
line: the ``drill`` command builds the settings and plays the stream into its report session.
``drill(settings)`` is the same run as one :class:`DrillOutcome` (events, every intent's
verdict), for a caller that wants the intents themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.domain.shard import Shard
from harness.domain.stream import (
    QUIET,
    Begin,
    Folder,
    Live,
    ReportFile,
    Sharded,
    ShardEvidence,
    Stream,
)
from harness.domain.verdicts import JUDGED_WORD, Outcome, Verdict
from harness.domain.words import counted
from harness.drill.again import REDRILLS, why
from harness.drill.drills import DRILLS, NAMES
from harness.drill.engine import DrillResults, drilling
from harness.drill.events import DrilledIntent, DrillFinding, DrillRun
from harness.drill.findings import IntentVerdict
from harness.drill.judge import Certifier
from harness.drill.merge import drill_evidence, intent_owner
from harness.drill.summary import drill_events, drill_run, head, intent_json, lanes, records
from harness.scenarios.events import Unknown
from harness.scenarios.sharding import sharded, unit
from harness.target.drill_profile import DrillProfile

#: what a service that never called the fakes may have done instead
REAL_MONEY = ("it may have called the real providers at their default URLs instead: real "
              "calls, real money (check the provider dashboards and the service's logs)")


@dataclass(frozen=True, kw_only=True)
class DrillSettings:
    """Everything one drill needs, built by the command (or a test) and never changed."""

    profile: DrillProfile
    target: str
    env: Mapping[str, str]
    drills: tuple[str, ...] = NAMES
    trials: int = 10
    concurrency: int | None = None  # intents at work at once (None: all: one round)
    ports: Mapping[str, int] = field(default_factory=dict)
    certify: Certifier | None = None
    #: the command that drills one drill again (shown in the report)
    command: Callable[[str], str] = field(default=lambda name: "")
    probe: bool = True  # one control intent first; stop if the fakes see nothing
    shard: Shard | None = None  # --shard K/N: the (drill, trial) intents this job owns
    progress: bool = False  # a live line for each intent that did not pass (--verbose)
    #: a trial the load left without evidence is drilled again, at most this often
    #: (``--drill-again N``; :mod:`harness.drill.again`)
    redrills: int = REDRILLS


@dataclass(frozen=True)
class DrillOutcome:
    """A run's events (one per drill, or one unknown when the probe reached nothing), every
    intent's verdict, and the run's verdict."""

    events: tuple[DrillRun, ...]
    results: DrillResults
    verdict: Verdict
    stamp: Sharded | None = None  # a shard's: what its report records
    evidence: tuple[dict[str, Any] | None, ...] = ()  # a shard's: by event, for merge


def drill(settings: DrillSettings, *, on_serving: Callable[[list[tuple[str, str, str]]], None]
          | None = None, on_intent: Callable[[IntentVerdict], None] | None = None
          ) -> DrillOutcome:
    """Drill ``settings.target``: ConfigError for a profile, variable or port problem before
    anything started; ``on_serving`` hears where the fakes listen once they do."""
    with drilling(settings.profile, target=settings.target, env=settings.env,
                  ports=settings.ports, concurrency=settings.concurrency) as engine:
        if on_serving is not None:
            on_serving(engine.fakes)
        results = _run(engine, settings, on_intent)
    return outcome_of(settings, results)


def run_drill(settings: DrillSettings, *, folder: Folder, live: Live = QUIET) -> Stream:
    """``drill``'s entry point: the fakes served (bad input raises before the stream begins),
    then one ``drill_run`` per drill (with a shard's evidence), ``drill.json`` (every intent's
    counts) as a file of the report folder; returns the run's verdict."""
    with drilling(settings.profile, target=settings.target, env=settings.env,
                  ports=settings.ports, concurrency=settings.concurrency) as engine:
        yield Begin((settings.target,))
        where = ", ".join(f"{name} ({kind}) at {url}" for name, kind, url in engine.fakes)
        live.say(f"drill: {settings.profile.name} at {settings.target}; the providers are "
                 f"served at {where}")
        results = _run(engine, settings, failing_intents(live.say) if settings.progress
                       else None, again_intents(live.say) if settings.progress else None)
    outcome = outcome_of(settings, results)
    if outcome.stamp is not None:
        yield outcome.stamp
    for n, event in enumerate(outcome.events):
        yield event
        evidence = outcome.evidence[n] if n < len(outcome.evidence) else None
        if evidence is not None:  # a shard's: what merge judges the drill again from
            yield ShardEvidence(evidence)
    drilled = {name: [intent_json(v) for v in verdicts]
               for name, verdicts in results.verdicts.items()}
    if results.unreached is not None:  # the probe that stopped the run is an intent too
        drilled.setdefault("control", []).insert(0, intent_json(results.unreached))
    yield ReportFile("drill.json", {"target": settings.target, "profile": settings.profile.name,
                                    "trials": settings.trials, "drills": drilled})
    intents = sum(len(v) for v in results.verdicts.values()) + (results.unreached is not None)
    again = sum(len(v.earlier) for vs in results.verdicts.values() for v in vs)
    at_once = f"{settings.concurrency} at work at once" if settings.concurrency else "all at once"
    at_once += f"; {again} more drilled again, as fresh intents" if again else ""
    live.say(f"{counted(intents, 'intent')}, {results.calls} provider calls in "
             f"{results.wall_s:.2f} s ({at_once}); every intent's counts in "
             f"{folder() / 'drill.json'}")
    return outcome.verdict


def failing_intents(say: Callable[[str], None]) -> Callable[[IntentVerdict], None]:
    """A live line for each intent that did not pass, as it is judged (``--verbose``)."""
    def one(v: IntentVerdict) -> None:
        if v.verdict != "pass":
            bad = next((f for f in v.findings if f.verdict in ("broken", "unknown")), None)
            say(f"  {v.evidence.drill:<13} trial {v.evidence.trial}: {JUDGED_WORD[v.verdict]}"
                + (f" — {bad.promise}: {bad.message}" if bad else ""))
    return one


def again_intents(say: Callable[[str], None]) -> Callable[[IntentVerdict], None]:
    """A live line for each intent the load left without evidence, as it is replaced by a
    fresh one (``--verbose``)."""
    def one(v: IntentVerdict) -> None:
        say(f"  {v.evidence.drill:<13} trial {v.evidence.trial}: drilled again — {why(v)}")
    return one


def _run(engine: Any, settings: DrillSettings,
         on_intent: Callable[[IntentVerdict], None] | None,
         on_again: Callable[[IntentVerdict], None] | None = None) -> DrillResults:
    return engine.run(list(settings.drills), settings.trials, certify=settings.certify,
                      on_intent=on_intent, probe=settings.probe,
                      owns=intent_owner(settings.shard, settings.drills, settings.trials),
                      redrills=settings.redrills, on_again=on_again)


def outcome_of(settings: DrillSettings, results: DrillResults) -> DrillOutcome:
    """The run's events from its judged intents (a shard's with the evidence merge needs)."""
    if results.unreached is not None:
        events: tuple[DrillRun, ...] = (unreached_event(results, results.unreached,
                                                        settings.command("control")),)
        return DrillOutcome(events, results, run_verdict(events), _stamp(settings), (None,))
    if settings.shard is None:
        events = tuple(drill_events(results, settings.command))
        return DrillOutcome(events, results, run_verdict(events))
    parts = [(head(results, name, settings.command(name)), records(verdicts))
             for name, verdicts in results.verdicts.items() if verdicts]  # a shard's drills
    events = tuple(drill_run(h, r) for h, r in parts)
    return DrillOutcome(events, results, run_verdict(events), _stamp(settings),
                        tuple(drill_evidence(h, r) for h, r in parts))


def _stamp(settings: DrillSettings) -> Sharded | None:
    if settings.shard is None:
        return None
    return sharded("drill", settings.shard, settings,
                   [str(getattr(settings.profile, "path", "") or "")],
                   order=[unit("drill", name) for name in settings.drills])


def run_verdict(events: tuple[DrillRun, ...]) -> Verdict:
    outcomes = {e.outcome for e in events}
    return "fail" if "fail" in outcomes else "unknown" if "unknown" in outcomes or not events \
        else "pass"


def unreached_event(results: DrillResults, probe: IntentVerdict, command: str) -> DrillRun:
    """The one diagnosis for a service that never called the fakes: no drill was run."""
    finding = probe.findings[0]
    ev = probe.evidence
    first = ev.submissions[0] if ev.submissions else None
    accepted = first is not None and first.status is not None and 200 <= first.status < 300
    money = f" {REAL_MONEY[0].upper()}{REAL_MONEY[1:]}." if accepted else ""
    reason = (f"{finding.message}; the drill stopped after this one control intent (nothing "
              f"else was drilled).{money}")
    outcome: Outcome = "unknown"
    return DrillRun(
        drill="control", target=results.target, verdict="unknown", outcome=outcome,
        description=DRILLS["control"].description + " (the probe before every drill)",
        profile=results.profile, trials=1,
        intents=(DrilledIntent(tag=ev.tag, trial=1, verdict="unknown",
                               findings=(DrillFinding(finding.promise, "unknown", reason,
                                                      finding.fix),),
                               timeline=lanes(ev, None), note=ev.note),),
        unknowns=(Unknown(reason, finding.fix),), command=command,
        wall_s=results.wall_s)
