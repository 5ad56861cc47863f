"""An intent without evidence is drilled again (harness/drill/again.py, docs/drill.md): which
intents the judge's findings make a fresh intent of, that a broken finding is never replaced,
the limit, the fresh intents of a round at once, and what the drill's events (and a merge of
shards) say about them. No CLI: the judge on hand-made evidence, and the engine's rounds with
its intents stubbed (no service)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import harness.drill.engine as engine_module
from harness.drill.again import REDRILLS, drill_again, load_only
from harness.drill.causes import LATE_UNREACHED, NO_TIMEOUT, SLOW_LOOKS, UNSTARTED
from harness.drill.drills import DRILLS, Drill
from harness.drill.engine import DrillResults, drilling
from harness.drill.events import DrilledAgain
from harness.drill.evidence import Call, IntentEvidence, Observation
from harness.drill.findings import Finding, IntentVerdict
from harness.drill.judge import Setup, judge_intent
from harness.drill.merge import drill_evidence, merge_drills
from harness.drill.summary import drill_events, drill_run, head, records
from harness.providers.received import signature
from harness.reports.live import drill_lines
from harness.target.drill_profile import load_drill
from tests._servers import free_port
from tests.drill.test_judge_promises import (
    ANSWER,
    FALLBACK,
    HANG,
    HELD_FALLBACK,
    PROFILE,
    TAG,
    _done,
    _ev,
    _look,
    _setup,
)

ROUND_TIMEOUT_S = 60.0  # bounds a hang only


def _judged(ev: IntentEvidence, setup: Setup) -> IntentVerdict:
    return judge_intent(ev, DRILLS[ev.drill], setup)


# -- which intents are drilled again (the judge's own findings) --------------------------------
def _slow_looks() -> IntentEvidence:
    """hang: the fallback's answer went at the fakes' backstop after one look."""
    return _ev("hang", [HANG, HELD_FALLBACK], [_look(0.6), _done(ANSWER, 1.0)])


def _late_unreached() -> IntentEvidence:
    """late: the service let go of the held primary before the drill let its answer go."""
    let_go = Call("gpt", "primary", 1, 0.01, 1.5, "abandoned", "conformant", held=True)
    return _ev("late", [let_go, FALLBACK], [_done(ANSWER, 0.6), _done(ANSWER, 1.6)])


def _no_timeout() -> IntentEvidence:
    """late: the service never gave up on its slow primary while watched (it won, late)."""
    primary = Call("gpt", "primary", 1, 0.01, 2.1, "answered", "conformant", held=True)
    running = [Observation(0.1 * i, "running", "running", None) for i in range(1, 20)]
    return _ev("late", [primary], [*running, _done(signature("gpt", 1, TAG), 2.2)])


def _unstarted() -> IntentEvidence:
    """late: the service took the job and had not started it when the budget ran out."""
    return _ev("late", [], [Observation(0.1 * i, "running", "queued", None)
                            for i in range(1, 90)])


@pytest.mark.parametrize(("evidence", "cause"), [
    (_slow_looks, SLOW_LOOKS), (_late_unreached, LATE_UNREACHED), (_no_timeout, NO_TIMEOUT),
    (_unstarted, UNSTARTED)])
def test_again_an_intent_the_load_left_without_evidence_is_drilled_again(
        tmp_path: Path, evidence: Any, cause: str) -> None:
    """Each load cause the judge gives (and nothing broken) makes a fresh intent: the trial's
    intent is unknown with that cause, and it replaced fewer than the limit so far."""
    v = _judged(evidence(), _setup(tmp_path, hedge=True))
    assert v.verdict == "unknown", v.findings
    assert load_only(v) == (cause,)
    assert drill_again(v) and drill_again(v, 1)
    assert not drill_again(v, 0)  # --drill-again 0: never


def test_again_the_limit_counts_the_intents_a_trial_replaced(tmp_path: Path) -> None:
    v = _judged(_slow_looks(), _setup(tmp_path, hedge=True))
    earlier = _judged(_slow_looks(), _setup(tmp_path, hedge=True))
    v.earlier = [earlier] * (REDRILLS - 1)
    assert drill_again(v)
    v.earlier = [earlier] * REDRILLS
    assert not drill_again(v)  # stays unknown, with its reason
    assert REDRILLS == 2


def test_again_a_broken_finding_is_never_replaced(tmp_path: Path) -> None:
    """The same evidence without the hedge declared: the fallback beside the unresolved primary
    breaks within_hedge. That intent stands, whatever else the load left unknown."""
    v = _judged(_slow_looks(), _setup(tmp_path, hedge=False))
    assert v.of("within_hedge") is not None and v.of("within_hedge").verdict == "broken"  # type: ignore[union-attr]
    assert v.of("timeout_not_failure").load == SLOW_LOOKS  # type: ignore[union-attr]
    assert load_only(v) == () and not drill_again(v)


def test_again_an_unknown_the_service_caused_is_not_drilled_again(tmp_path: Path) -> None:
    """The late answer reached the service and it did not answer the list of races: its API,
    not the load; and an intent with such an unknown beside a load cause stands too."""
    delivered = Call("gpt", "primary", 1, 0.01, 0.9, "answered", "conformant", held=True)
    ev = _ev("late", [delivered, FALLBACK], [_done(ANSWER, 0.6), _done(ANSWER, 1.0)],
             races=None)
    v = _judged(ev, _setup(tmp_path, hedge=True))
    races = v.of("one_winner_per_job")
    assert races is not None and races.verdict == "unknown" and not races.load, races
    assert not drill_again(v)
    v.findings.append(Finding("timeout_not_failure", "unknown", "looked once", "", SLOW_LOOKS))
    assert load_only(v) == () and not drill_again(v)
    # no call, and the job failed (or was never seen): the service's doing, or its profile's
    for looks in ([Observation(0.5, "failed", "failed", None)], []):
        quiet = _judged(_ev("late", [], looks), _setup(tmp_path, hedge=True))
        assert quiet.verdict == "unknown" and not drill_again(quiet), quiet.findings
        assert "never called the fakes" in quiet.findings[0].message
    passed = _judged(_ev("hang", [HANG, FALLBACK], [_done(ANSWER, 0.6)]),
                     _setup(tmp_path, hedge=True))
    assert passed.verdict == "pass" and not drill_again(passed)


# -- the engine's rounds, its intents stubbed --------------------------------------------------
SLOW = Finding("timeout_not_failure", "unknown", "the drill could not look twice", "fix",
               SLOW_LOOKS)
LATE = Finding("one_winner_per_job", "unknown", "the late answer never reached", "fix",
               LATE_UNREACHED)
RACES = Finding("one_winner_per_job", "unknown", "the service did not answer the list of races")
HELD = Finding("timeout_not_failure", "held", "never failed")
BILLED = Finding("billed_within_bound", "broken", "3 billed calls")
HEDGE = Finding("within_hedge", "broken", "a second new attempt")
#: (drill, trial) -> the findings of its first intent, its second, …: a KeyError or an
#: IndexError if the engine drilled a trial more often than the plan allows
PLAN: dict[tuple[str, int], list[list[Finding]]] = {
    ("hang", 1): [[SLOW], [HELD]],  # drilled again once, then held
    ("hang", 2): [[SLOW, BILLED]],  # broken: stands, never replaced
    ("hang", 3): [[SLOW], [SLOW], [SLOW]],  # still without evidence after the limit
    ("late", 1): [[RACES, SLOW]],  # an unknown of the service's own: stands
    ("late", 2): [[LATE], [HEDGE]],  # the fresh intent broke a promise: it is the verdict
    ("late", 3): [[HELD]],
}


@dataclass
class Stubbed:
    """The engine's intents, stubbed: each is a fresh tag; the judge reads the plan."""

    second: threading.Barrier  # every second intent of a trial waits here: they run at once
    intents: Counter[tuple[str, int]]
    tags: dict[str, int]
    lock: threading.Lock

    def intent(self, engine: Any, drill: Drill, trial: int, slot: Any) -> Any:
        stub = self

        class Intent:
            def run(self) -> IntentEvidence:
                with stub.lock:
                    stub.intents[(drill.name, trial)] += 1
                    n = stub.intents[(drill.name, trial)]
                tag = f"drill-{uuid.uuid4().hex[:12]}"
                stub.tags[tag] = n - 1
                if n == 2:
                    stub.second.wait()  # BrokenBarrierError unless the three run at once
                return IntentEvidence(drill.name, trial, tag, 0.0, ended_at=1.0)

        return Intent()

    def judge(self, ev: IntentEvidence, drill: Drill, setup: Setup) -> IntentVerdict:
        return IntentVerdict(ev, list(PLAN[(ev.drill, ev.trial)][self.tags[ev.tag]]))


def _rounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            redrills: int) -> tuple[DrillResults, Stubbed]:
    """Every trial of the plan, all at once (the default concurrency: one round)."""
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE.replace("HEDGE", "true"), encoding="utf-8")
    stub = Stubbed(threading.Barrier(3, timeout=ROUND_TIMEOUT_S), Counter(), {},
                   threading.Lock())
    monkeypatch.setattr(engine_module, "IntentRun", stub.intent)
    monkeypatch.setattr(engine_module, "judge_intent", stub.judge)
    ports = {"gpt": free_port(), "claude": free_port()}
    with drilling(load_drill(path), target="http://127.0.0.1:9", env={},
                  ports=ports) as engine:
        return engine.run(["hang", "late"], 3, redrills=redrills), stub


def test_again_the_engine_drills_a_fresh_intent_for_each_trial_without_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the round, the trials the load alone left unknown are drilled again, all at once
    (the barrier of three), at most twice each; each trial is judged by its last intent, and
    an intent that broke a promise (or left an unknown of the service's own) is never
    replaced."""
    results, stub = _rounds(tmp_path, monkeypatch, REDRILLS)
    assert stub.intents == {("hang", 1): 2, ("hang", 2): 1, ("hang", 3): 3, ("late", 1): 1,
                            ("late", 2): 2, ("late", 3): 1}
    hang, late = results.verdicts["hang"], results.verdicts["late"]
    assert [v.evidence.trial for v in hang] == [1, 2, 3]
    assert [(v.verdict, len(v.earlier)) for v in hang] == [
        ("pass", 1), ("fail", 0), ("unknown", 2)]
    assert [(v.verdict, len(v.earlier)) for v in late] == [
        ("unknown", 0), ("fail", 1), ("pass", 0)]
    assert hang[2].findings == [SLOW]  # honest: still unknown, with its reason
    assert hang[0].earlier[0].evidence.tag != hang[0].evidence.tag  # a fresh intent
    events = {e.drill: e for e in drill_events(results, lambda name: "")}
    assert events["hang"].drilled_again == (DrilledAgain(SLOW_LOOKS, 3),)
    assert events["late"].drilled_again == (DrilledAgain(LATE_UNREACHED, 1),)
    assert events["hang"].trials == 3 and events["hang"].verdict == "fail"
    assert "    3 intents drilled again: the looks at the job were slow (the trials are " \
        "judged by their last intent)" in list(drill_lines(events["hang"]))
    shown = [i for i in events["hang"].intents if i.trial == 3]
    assert shown and "drilled again in place of drill-" in shown[0].note


def test_again_never_when_the_limit_is_zero(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    results, stub = _rounds(tmp_path, monkeypatch, 0)
    assert set(stub.intents.values()) == {1}
    assert all(not v.earlier for vs in results.verdicts.values() for v in vs)
    assert [v.verdict for v in results.verdicts["hang"]] == ["unknown", "fail", "unknown"]
    assert all(not e.drilled_again and all("drilled again" not in line
                                           for line in drill_lines(e))
               for e in drill_events(results, lambda name: ""))


def test_again_merge_says_what_one_run_says(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard records each trial's re-drills with its intents; ``merge`` judges the drill
    from every shard's records to the same event as the run judged whole."""
    results, _ = _rounds(tmp_path, monkeypatch, REDRILLS)
    for name, verdicts in results.verdicts.items():
        h = head(results, name, "")
        whole = drill_run(h, records(verdicts))
        parts = [(drill_run(h, records(verdicts[k::2])),
                  drill_evidence(h, records(verdicts[k::2]))) for k in (1, 0)]
        assert merge_drills(parts) == whole
        assert whole.drilled_again
