"""Arrival patterns: seeded plans (the same seed, the same schedule of arrivals), real spacing of
the copies, the scenario fields that choose them, and a run folder that replays its plan."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.domain.errors import ConfigError
from harness.scenarios import arrivals
from harness.scenarios.emit import timeline_of
from harness.scenarios.history import Op
from harness.scenarios.loader import load_scenario
from harness.scenarios.model import Fault, Scenario
from harness.scenarios.replay import replay
from harness.scenarios.runfolder import write_run
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets.base import Target
from tests.detection.conftest import Start


def test_a_seed_fixes_the_plan_and_another_seed_changes_it() -> None:
    one = arrivals.plan("straddle", 8, seed=7, step=0, latency_ms=30.0)
    again = arrivals.plan("straddle", 8, seed=7, step=0, latency_ms=30.0)
    other = arrivals.plan("straddle", 8, seed=8, step=0, latency_ms=30.0)
    assert one == again and one.fractions != other.fractions
    # the latency scales the plan; the seed alone fixes its shape
    slower = arrivals.plan("straddle", 8, seed=7, step=0, latency_ms=60.0)
    assert slower.fractions == one.fractions
    assert slower.offsets_ms == pytest.approx([2 * ms for ms in one.offsets_ms])


def test_each_pattern_has_its_shape() -> None:
    assert arrivals.plan("burst", 5, seed=1, step=0).offsets_ms == (0.0,) * 5
    staggered = arrivals.plan("staggered", 50, seed=1, step=0, window_ms=80.0)
    assert staggered.offsets_ms[0] == 0.0
    assert all(0 <= ms < 80 for ms in staggered.offsets_ms)
    assert max(staggered.offsets_ms) > 40  # spread over the window, not bunched at its start
    relative = arrivals.plan("staggered", 50, seed=1, step=0, latency_ms=10.0)
    assert relative.window_ms == 30.0  # no window_ms: three first-request latencies
    straddle = arrivals.plan("straddle", 50, seed=1, step=0, latency_ms=90.0)
    assert straddle.offsets_ms[0] == 0.0
    assert all(60.0 <= ms <= 90.0 for ms in straddle.offsets_ms[1:])  # the last third
    with pytest.raises(ValueError, match="needs the first request's latency"):
        arrivals.plan("straddle", 3, seed=1, step=0)
    with pytest.raises(ValueError, match="unknown arrival pattern 'trickle'"):
        arrivals.plan("trickle", 3, seed=1, step=0)


def test_copies_are_really_spaced_as_planned() -> None:
    offsets = (0.0, 0.03, 0.06, 0.09)
    started: list[tuple[float, str]] = []
    lock = threading.Lock()

    def call() -> str:
        with lock:
            started.append((time.perf_counter(), threading.current_thread().name))
        return threading.current_thread().name

    before = time.perf_counter()
    results, sent = arrivals.send_spaced(call, offsets)
    assert results == [f"group-{i}" for i in range(4)]
    assert all(s >= o for s, o in zip(sent, offsets, strict=True))  # never early
    calls = {name: t for t, name in started}
    # measured here, not by send_spaced: no copy reached the service before its offset (their
    # order is not asserted: a loaded machine may wake a sleeping thread late)
    assert all(calls[f"group-{i}"] - before >= offsets[i] for i in range(4))


def test_the_scenario_chooses_patterns_and_trials(
        write_scenario: Callable[[str, str], Path]) -> None:
    path = write_scenario("s", """\
name: s
arrival: {patterns: [staggered, straddle], trials: 7, window_ms: 40}
intents: {i: {contract: c, input: {}}}
steps:
  - {at: 0, create: {key: k, intent: i}, concurrent: 4}
  - {at: 1, fault: handler_error}
checkers: [one_job_per_intent]
""")
    scenario = load_scenario(path)
    assert scenario.arrival is not None
    assert scenario.arrival.patterns == ("staggered", "straddle")
    assert (scenario.arrival.trials, scenario.arrival.window_ms) == (7, 40.0)
    assert isinstance(scenario.steps[1].action, Fault)
    assert "handler_faults" in scenario.requires


@pytest.mark.parametrize(("text", "line", "problem", "fix"), [
    ("arrival: {patterns: [straddle]}\nsteps: [{at: 0, create: {key: k, intent: i}}]\n", 3,
     "arrival patterns apply to concurrent creates", "add concurrent: N to a create step"),
    ("arrival: {patterns: [trickle]}\nsteps: [{at: 0, create: {key: k, intent: i}}]\n", 3,
     "'trickle' is not allowed here", "write one of: burst, staggered, straddle"),
    ("steps: [{at: 0, fault: crash everything}]\n", 3, "\"crash everything\": 'crash "
     "everything' does not match", "fault: handler_error  (the profile's default handler fault)"),
])
def test_a_wrong_arrival_or_fault_names_the_line(
        write_scenario: Callable[[str, str], Path], text: str, line: int, problem: str,
        fix: str) -> None:
    path = write_scenario("bad", "name: bad\nintents: {i: {contract: c, input: {}}}\n" + text
                          + "checkers: [one_job_per_intent]\n")
    with pytest.raises(ConfigError) as caught:
        load_scenario(path)
    assert caught.value.line == line and problem in caught.value.message
    assert fix in (caught.value.fix or "")


def test_a_run_folder_replays_its_schedule_of_arrivals(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario], tmp_path: Path) -> None:
    service = start_service("correct")
    target = profiled(service.url)
    scenario = detection["duplicate_arrivals"]
    first = run_scenario(scenario, target, seed=5, arrival="straddle")
    second = run_scenario(scenario, target, seed=5, arrival="straddle")
    other = run_scenario(scenario, target, seed=6, arrival="straddle")
    assert first.arrival == "straddle" and len(first.arrivals) == 1
    plan = first.arrivals[0]
    assert plan["fractions"] == second.arrivals[0]["fractions"] != other.arrivals[0]["fractions"]
    assert plan["latency_ms"] > 0 and plan["offsets_ms"][0] == 0.0
    # each copy as it really went, in the history's order of copies: never sent before its
    # planned offset (sorted, the sends dominate the plan), never answered before it was sent
    sent, answered = plan["sent_ms"], plan["answered_ms"]
    assert len(sent) == len(answered) == len(plan["offsets_ms"])
    assert sorted(plan["planned_ms"]) == pytest.approx(sorted(plan["offsets_ms"]), abs=0.002)
    assert all(s >= o for s, o in zip(sent, plan["planned_ms"], strict=True))
    assert all(a >= s for s, a in zip(sent, answered, strict=True))
    assert plan["together"] is (max(sent) <= min(answered))
    calibration = [op for op in first.history if op.process == "calibrate"]
    assert len(calibration) == 2 * arrivals.CALIBRATION_SAMPLES
    folder = write_run(first, tmp_path)
    recorded = json.loads((folder / "results.json").read_text())
    assert recorded["arrival"] == "straddle" and recorded["seed"] == 5
    again = replay(folder, target)
    assert again.result is not None and again.result.status == "held"
    assert again.result.arrivals[0]["fractions"] == plan["fractions"]


def test_each_copy_s_real_send_and_answer_are_measured() -> None:
    """The first copies' calls return only once the last copy was sent (an event, not a
    sleep): in flight together. Then a group whose first answer comes back before a copy
    planned 1 s later is sent: not together."""
    last_sent = threading.Event()

    def held(i: int) -> int:
        if i == 2:
            last_sent.set()
        else:
            assert last_sent.wait(timeout=10)
        return i

    results, sent, answered = arrivals.send_copies(held, (0.0, 0.0, 0.02))
    assert results == [0, 1, 2] and sent[2] >= 0.02
    assert all(a >= s for s, a in zip(sent, answered, strict=True))
    assert arrivals.in_flight_together([s * 1000 for s in sent], [a * 1000 for a in answered])
    # the first copy's call returns at once; the second is sent 1 s after the release (the
    # spacing under test; a loaded machine delays a returning thread by far less)
    _, sent, answered = arrivals.send_copies(lambda i: i, (0.0, 1.0))
    assert sent[1] >= 1.0 and answered[0] < sent[1]
    assert not arrivals.in_flight_together([s * 1000 for s in sent],
                                           [a * 1000 for a in answered])
    assert not arrivals.in_flight_together([0.0, 300.0], [1.5, 301.0])
    assert arrivals.in_flight_together([0.0, 0.4], [2.0, 2.1])
    assert not arrivals.in_flight_together([], [])


def test_the_group_s_timeline_shows_when_each_copy_really_went() -> None:
    """A lane per copy at its measured send and answer (process/k is the k-th measured copy);
    a run recorded before sends were measured keeps its planned offsets."""
    history = []
    for k, (kind, value) in enumerate([("ok", {"job": "j", "created": True}),
                                        ("ok", {"job": "j", "created": False, "busy_ms": 40.0})]):
        history.append(Op(2 * k, 0.0, "w", f"alice/{k + 1}", "invoke", "create", {}))
        history.append(Op(2 * k + 1, 0.0, "w", f"alice/{k + 1}", kind, "create", value))
    plan = {"pattern": "staggered", "offsets_ms": [0.0, 30.0]}
    # the history's copies in another order than the plan's threads: process/1 is the thread
    # planned at +0 ms, the plan's second
    measured = {"pattern": "staggered", "offsets_ms": [30.0, 0.0], "planned_ms": [0.0, 30.0],
                "sent_ms": [0.25, 31.5], "answered_ms": [12.0, 80.0], "together": False}
    timeline = timeline_of(history, 1.0, [measured])
    assert timeline is not None
    first, second = ([(e.t, e.kind, e.label) for e in lane.events] for lane in timeline.lanes)
    assert first == [(0.00025, "started", "sent at +0.25 ms (planned +0 ms)"),
                     (0.012, "created", "201 created at +12 ms")]
    assert second[0] == (0.0315, "started", "sent at +31.5 ms (planned +30 ms)")
    assert second[1][:2] == (pytest.approx(0.0715), "dispatched")  # in progress for 40 ms
    assert second[2] == (0.08, "replayed", "the job (a replay) at +80 ms")
    old = timeline_of(history, 1.0, [plan])
    assert old is not None
    assert [(e.t, e.kind) for e in old.lanes[1].events] == [
        (0.03, "started"), (pytest.approx(0.07), "dispatched"), (pytest.approx(0.07), "replayed")]
