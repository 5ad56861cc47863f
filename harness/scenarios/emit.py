"""The scenario engine's results as its events (:mod:`harness.scenarios.events`): a run (with
a timeline built from its history and the history lines of each violation), a trial series, the
detection matrix. A new result field touches the engine, this projection and the renderers that
show it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.domain.verdicts import OUTCOME
from harness.scenarios.events import (
    Check,
    DetectionMatrix,
    Lane,
    MatrixCell,
    ScenarioRun,
    Timeline,
    TimelineEvent,
    Unknown,
    UnrunStep,
    Violation,
)
from harness.scenarios.history import pairs
from harness.scenarios.render import format_pair

if TYPE_CHECKING:
    from harness.scenarios.history import Op
    from harness.scenarios.matrix import Matrix as ScenarioMatrix
    from harness.scenarios.runner import RunResult

MAX_HISTORY_LINES = 40  # per violation in results.json; the run folder has the whole history
# history op name -> timeline mark
MARKS = {"start": "started", "dispatched": "dispatched", "timed_out": "timed_out",
         "failed": "failed", "cancelled": "cancelled", "crash": "crash"}


# -- scenario runs ------------------------------------------------------------------------------
def timeline_of(history: Sequence[Op], duration: float,
                arrivals: Sequence[Mapping[str, Any]] = ()) -> Timeline | None:
    """A lane per attempt: start, dispatch, timeout, result and claim outcome (virtual time);
    for a run with a concurrent group, a lane per copy in real time (``arrivals``: the group's
    plan of offsets)."""
    if arrivals:
        group = _group_lanes(history, arrivals)
        if group is not None:
            return group
    lanes: dict[str, dict[str, Any]] = {}
    versions: dict[str, int] = {}
    for op in history:
        if op.type == "invoke":
            continue
        value = op.value
        if op.f == "read" and op.type == "ok" and value.get("completed_by"):
            versions[str(value["completed_by"])] = int(value.get("version") or 0)
        attempt = value.get("attempt") if isinstance(value.get("attempt"), str) else None
        if attempt is None or op.f not in (*MARKS, "succeeded"):
            continue
        lane = lanes.setdefault(attempt, {"events": [], "outcome": None, "provider": ""})
        if op.f == "crash":
            lane["events"].append(TimelineEvent(op.time, "crash", "the worker died"))
            continue
        if op.type != "ok":
            lane["events"].append(TimelineEvent(op.time, "failed" if op.type == "fail" else
                                                "unknown", f"{op.f} {op.type}"))
            continue
        if op.f == "succeeded":
            outcome = str(value.get("outcome") or "")
            lane["events"].append(TimelineEvent(op.time, "result", "result arrived"))
            if outcome:
                lane["events"].append(TimelineEvent(op.time, outcome, f"claim {outcome}"))
                lane["outcome"] = outcome
        else:
            lane["events"].append(TimelineEvent(op.time, MARKS[op.f], op.f))
            state = value.get("state")
            if op.f in ("failed", "cancelled", "timed_out"):
                lane["outcome"] = "unknown" if state == "unknown" else op.f
    for op in history:  # providers are named on the start invocations
        if op.type == "invoke" and op.f == "start" and op.value.get("attempt") in lanes:
            lanes[op.value["attempt"]]["provider"] = str(op.value.get("provider", ""))
    if not lanes:
        return _request_lanes(history, duration)
    return Timeline(
        duration=duration,
        lanes=tuple(
            Lane(name, lane["provider"], tuple(lane["events"]), lane["outcome"],
                 versions.get(name) if lane["outcome"] == "won" else None)
            for name, lane in lanes.items()
        ),
    )


def _group_lanes(history: Sequence[Op],
                 arrivals: Sequence[Mapping[str, Any]]) -> Timeline | None:
    """The first concurrent group as it happened: each copy sent (when it really was; a run
    recorded before that was measured: its planned offset), waiting while the service answered
    "in progress" (its busy time), then answered (when its answer came back)."""
    group = arrivals[0]
    # copy k of the history: its planned offset (the plan's own list is in the order the
    # copies' threads were made, which a run recorded before the measurement maps as is)
    planned = [float(o) for o in (group.get("planned_ms") or group.get("offsets_ms") or ())]
    offsets = [float(o) for o in (group.get("sent_ms") or planned)]
    answers = [float(o) for o in (group.get("answered_ms") or ())]
    lanes: list[Lane] = []
    last = 0.0
    for op in history:
        process, _, n = op.process.rpartition("/")
        if op.type == "invoke" or op.f != "create" or not process or not n.isdigit():
            continue
        if int(n) > len(offsets):
            continue
        copy = int(n) - 1
        sent = offsets[copy] / 1000
        value = op.value
        busy = float(value.get("busy_ms") or 0) / 1000
        end = answers[copy] / 1000 if copy < len(answers) else sent + busy
        if op.type == "ok":
            kind = "created" if value.get("created") else "replayed"
            label = "201 created" if value.get("created") else "the job (a replay)"
        elif op.type == "fail":
            kind, label = "refused", f"{value.get('status', '')} {value.get('error', '')}".strip()
        else:
            kind, label = "unknown", "no answer"
        plan = (f" (planned +{planned[copy]:g} ms)" if answers and copy < len(planned)
                and group.get("pattern") != "burst" else "")
        events = [TimelineEvent(sent, "started", f"sent at +{sent * 1000:g} ms{plan}")]
        if busy:
            events.append(TimelineEvent(min(sent + busy, end), "dispatched",
                                        f"in progress for {busy * 1000:.0f} ms, then retried"))
        events.append(TimelineEvent(end, kind, label + (f" at +{end * 1000:g} ms"
                                                        if answers else "")))
        last = max(last, end)
        lanes.append(Lane(op.process, "", tuple(events), kind))
    if not lanes:
        return None
    return Timeline(max(last * 1.1, 0.001), tuple(lanes))


def _request_lanes(history: Sequence[Op], duration: float) -> Timeline | None:
    """For scenarios without attempts: a lane per client, a mark per answered request."""
    lanes: dict[str, list[TimelineEvent]] = {}
    for op in history:
        if op.type == "invoke":
            continue
        if op.type == "ok" and op.f == "create":
            kind, label = ("created", "201 created") if op.value.get("created") else (
                "replayed", "200 replayed")
        elif op.type == "fail":
            kind, label = "refused", f"{op.f}: {op.value.get('code') or op.value.get('error', '')}"
        elif op.type == "info":
            kind, label = "unknown", f"{op.f}: no answer"
        else:
            kind, label = op.f, op.f
        lanes.setdefault(op.process, []).append(TimelineEvent(op.time, kind, label))
    if not lanes:
        return None
    return Timeline(duration, tuple(Lane(p, "", tuple(events)) for p, events in lanes.items()))


def history_digest(history: Sequence[Op]) -> str:
    digest = hashlib.sha256()
    for op in history:
        digest.update(op.to_line().encode("utf-8") + b"\n")
    return "sha256:" + digest.hexdigest()


def unknown_of(item: Any) -> Unknown:
    """An unknown as the engine gives it: a reason string, or an object with reason and fix."""
    if isinstance(item, str):
        return Unknown(item)
    return Unknown(str(getattr(item, "reason", item)), str(getattr(item, "fix", "") or ""))


def violations_of(check: Any, history: Sequence[Op], kind: str | None = None) -> tuple[
        Violation, ...]:
    """A checker's violations with the history lines that show them (``kind``: only those)."""
    all_pairs = pairs(history)
    out = []
    for v in check.violations:
        if kind and v.kind != kind:
            continue
        wanted = set(v.ops)
        lines = [format_pair(p) for p in all_pairs if wanted.intersection(p.indices)]
        out.append(Violation(v.message, v.kind, tuple(v.ops), tuple(lines[:MAX_HISTORY_LINES])))
    return tuple(out)


def checks_of(result: Any, history: Sequence[Op]) -> tuple[Check, ...]:
    return tuple(
        Check(c.checker, c.promise, c.verdict, violations_of(c, history),
              tuple(unknown_of(u) for u in c.unknowns),
              tuple(str(f) for f in getattr(c, "fixes", ()) or ()),
              str(getattr(c, "evidence", None) or ""), getattr(c, "seen", None))
        for c in result.checks
    )


def unrun_of(result: Any) -> tuple[UnrunStep, ...]:
    return tuple(UnrunStep(int(u.get("step", 0)), str(u.get("why", "")),
                           str(u.get("fix", "") or ""), u.get("line"), str(u.get("kind", "")))
                 for u in getattr(result, "unrun", ()) or ())


def scenario_run(result: RunResult, *, replay: str | None = None) -> ScenarioRun:
    return ScenarioRun(
        scenario=result.scenario.name,
        target=result.target,
        verdict=result.status,
        outcome=OUTCOME[result.status],
        seed=result.seed,
        source=result.scenario.source,
        description=result.scenario.description or "",
        history_digest=history_digest(result.history) if result.history else "",
        ops=len(result.history),
        checks=checks_of(result, result.history),
        timeline=timeline_of(result.history, result.virtual_seconds, result.arrivals),
        run_dir=str(result.folder) if result.folder else None,
        replay_command=replay,
        reason=result.reason or "",
        fix=str(getattr(result, "fix", "") or ""),
        unrun=unrun_of(result),
        warnings=tuple(str(w) for w in getattr(result, "warnings", ()) or ()),
        arrival=result.arrival,
        wall_s=result.elapsed_s,
        virtual_s=result.virtual_seconds,
    )


# -- the detection matrix -----------------------------------------------------------------------
def detection_matrix(matrix: ScenarioMatrix) -> DetectionMatrix:
    problems = tuple(matrix.problems())
    return DetectionMatrix(
        scenarios=tuple(matrix.scenarios),
        targets=tuple(matrix.stores),
        cells=tuple(
            MatrixCell(scenario, store, status)
            for scenario in matrix.scenarios
            for store in matrix.stores
            if (status := matrix.status(store, scenario)) is not None
        ),
        # a shard's cells: a mutant caught by another shard is judged when they are merged
        outcome="fail" if problems else "skip" if matrix.partial else "pass",
        problems=problems,
        wall_s=matrix.elapsed_s,
    )
