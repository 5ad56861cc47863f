"""The scenario engine's results as its events (:mod:`harness.scenarios.events`): a run (with
a timeline built from its history and the history lines of each violation), a trial series, the
detection matrix. A new result field touches the engine, this projection and the renderers that
show it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.domain.verdicts import CHECK_VERDICT, OUTCOME, SCENARIO_VERDICT
from harness.domain.words import counted
from harness.scenarios.checkers.base import PROMISES
from harness.scenarios.checkers.losers import ALLOWED, ordered
from harness.scenarios.events import (
    Check,
    DetectionMatrix,
    FirstFailure,
    Lane,
    LoserCount,
    MatrixCell,
    PatternSummary,
    Rate,
    ScenarioRun,
    Timeline,
    TimelineEvent,
    TrialFailure,
    TrialSeries,
    Unknown,
    UnknownCount,
    UnrunStep,
    Violation,
)
from harness.scenarios.history import pairs
from harness.scenarios.render import format_pair
from harness.scenarios.trials import failure_title

if TYPE_CHECKING:
    from harness.scenarios.history import Op
    from harness.scenarios.matrix import Matrix as ScenarioMatrix
    from harness.scenarios.runner import RunResult
    from harness.scenarios.trials import TrialSet

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
    """The first concurrent group as it happened: each copy sent at its planned offset, waiting
    while the service answered "in progress" (its busy time), then answered."""
    offsets = [float(o) for o in (arrivals[0].get("offsets_ms") or ())]
    lanes: list[Lane] = []
    last = 0.0
    for op in history:
        process, _, n = op.process.rpartition("/")
        if op.type == "invoke" or op.f != "create" or not process or not n.isdigit():
            continue
        if int(n) > len(offsets):
            continue
        sent = offsets[int(n) - 1] / 1000
        value = op.value
        busy = float(value.get("busy_ms") or 0) / 1000
        if op.type == "ok":
            kind = "created" if value.get("created") else "replayed"
            label = "201 created" if value.get("created") else "the job (a replay)"
        elif op.type == "fail":
            kind, label = "refused", f"{value.get('status', '')} {value.get('error', '')}".strip()
        else:
            kind, label = "unknown", "no answer"
        events = [TimelineEvent(sent, "started", f"sent at +{sent * 1000:g} ms")]
        if busy:
            events.append(TimelineEvent(sent + busy, "dispatched",
                                        f"in progress for {busy * 1000:.0f} ms, then retried"))
        events.append(TimelineEvent(sent + busy, kind, label))
        last = max(last, sent + busy)
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
        Check(c.checker, c.promise, CHECK_VERDICT[c.verdict], violations_of(c, history),
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
        verdict=SCENARIO_VERDICT[result.status],
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


# -- trial series -------------------------------------------------------------------------------
def _losers(histogram: Counter[str]) -> tuple[LoserCount, ...]:
    return tuple(LoserCount(label, n, None if label == "no answer" else label in ALLOWED)
                 for label, n in ordered(histogram))


def _unknowns_of(run: Any) -> set[tuple[str, str, str]]:
    """(checker, reason, fix) of each unknown one run showed (a step that did not happen too)."""
    seen = set()
    for check in run.checks:
        if check.verdict == "unknown":
            fixes = tuple(getattr(check, "fixes", ()) or ())
            for n, item in enumerate(check.unknowns):
                u = unknown_of(item)
                fix = u.fix or (fixes[n] if len(fixes) == len(check.unknowns)
                                else fixes[0] if len(fixes) == 1 else "")
                seen.add((check.checker, u.reason, fix))
    for step in unrun_of(run):
        seen.add(("", f"did not happen: {step.why}", step.fix))
    return seen


def first_unknown_runs(ts: TrialSet) -> list[Any]:
    """The first unknown run of each kind of unknown (their run folders are kept as evidence)."""
    firsts: dict[tuple[str, str, str], Any] = {}
    for run in ts.all_runs:
        if run.status == "unknown":
            for key in _unknowns_of(run):
                firsts.setdefault(key, run)
    return list({id(run): run for run in firsts.values()}.values())


def _unanswered(run: Any) -> tuple[Violation, ...]:
    """The requests of a run that got no answer, with what the client saw (the op's detail)."""
    lines = tuple(format_pair(p) for p in pairs(run.history) if p.type == "info")
    if not lines:
        return ()
    return (Violation(f"{counted(len(lines), 'request')} got no answer", "", (), lines),)


def _series_unknowns(ts: TrialSet, replays: Mapping[int, str]) -> tuple[UnknownCount, ...]:
    """Why verdicts were unknown, in how many trials, and the first trial that showed each."""
    counts: Counter[tuple[str, str, str]] = Counter()
    firsts: dict[tuple[str, str, str], Any] = {}
    for run in ts.all_runs:
        found = _unknowns_of(run)
        counts.update(found)
        for key in found:
            firsts.setdefault(key, run)
    out = []
    for (checker, reason, fix), n in sorted(counts.items()):
        run = firsts[(checker, reason, fix)]
        first = FirstFailure(
            trial=run.seed - ts.seed + 1, seed=run.seed, pattern=run.arrival,
            violations=_unanswered(run),
            timeline=timeline_of(run.history, run.virtual_seconds, run.arrivals),
            run_dir=str(run.folder) if run.folder else None,
            replay_command=replays.get(id(run)))
        out.append(UnknownCount(reason, n, checker, fix, first))
    return tuple(out)


def trial_series(
    ts: TrialSet,
    *,
    replays: Mapping[str, str] | None = None,
    measure: Callable[[str | None], str] | None = None,
    unknown_replays: Mapping[int, str] | None = None,
) -> TrialSeries:
    """A trial set as one event: rates per failure and pattern, the losers' histogram per
    pattern, and each failure's first failing trial (violations, timeline, commands)."""
    def promise(checker: str) -> str:  # in the target's terms when the engine says them
        said = getattr(ts, "promise", None)
        return str(said(checker)) if callable(said) else PROMISES.get(checker, checker)

    failures = []
    for failure, rates in ts.failures().items():
        checker, _, kind = failure.partition(":")
        first_run = max(rates.values(), key=lambda r: r.failed).first
        first = None
        if first_run is not None:
            broken = [c for c in first_run.checks if c.checker == checker]
            first = FirstFailure(
                trial=first_run.seed - ts.seed + 1, seed=first_run.seed,
                pattern=first_run.arrival,
                violations=tuple(v for c in broken
                                 for v in violations_of(c, first_run.history, kind or None)),
                timeline=timeline_of(first_run.history, first_run.virtual_seconds,
                                     first_run.arrivals),
                run_dir=str(first_run.folder) if first_run.folder else None,
                replay_command=(replays or {}).get(failure),
                measure_command=measure(first_run.arrival) if measure else None,
            )
        failures.append(TrialFailure(
            id=failure, checker=checker, title=failure_title(failure),
            promise=promise(checker), kind=kind,
            rates=tuple(Rate(p, r.failed, r.trials, r.text) for p, r in rates.items()),
            first=first,
        ))
    def busy(pattern: str) -> tuple[LoserCount, ...]:
        counts = ts.busy(pattern) if hasattr(ts, "busy") else {}
        return tuple(LoserCount(kind, n) for kind, n in sorted(counts.items()) if n)

    patterns = tuple(
        PatternSummary(p, len(ts.runs.get(p, [])), ts.violated(p), _losers(ts.histogram(p)),
                       busy(p))
        for p in ts.patterns if ts.runs.get(p)
    ) if ts.status != "not_applicable" else ()
    warnings = tuple(str(w) for w in getattr(ts.all_runs[0], "warnings", ())) if ts.all_runs \
        else ()
    return TrialSeries(
        scenario=ts.scenario.name, target=ts.target,
        verdict=SCENARIO_VERDICT[ts.status],
        outcome=OUTCOME[ts.status],
        seed=ts.seed, trials=ts.trials, source=ts.scenario.source,
        description=ts.scenario.description or "",
        checkers=tuple(ts.scenario.checkers),
        promises=tuple(promise(c) for c in ts.scenario.checkers),
        patterns=patterns, failures=tuple(failures),
        unknowns=_series_unknowns(ts, unknown_replays or {}),
        fixes=tuple(str(f) for f in (ts.fixes() if hasattr(ts, "fixes") else ())),
        warnings=warnings,
        reason=ts.reason or "", fix=str(getattr(ts, "fix", "") or ""), wall_s=ts.elapsed_s,
    )


# -- the detection matrix -----------------------------------------------------------------------
def detection_matrix(matrix: ScenarioMatrix) -> DetectionMatrix:
    problems = tuple(matrix.problems())
    return DetectionMatrix(
        scenarios=tuple(matrix.scenarios),
        targets=tuple(matrix.stores),
        cells=tuple(
            MatrixCell(scenario, store, SCENARIO_VERDICT[matrix.status(store, scenario)])
            for scenario in matrix.scenarios
            for store in matrix.stores
        ),
        outcome="fail" if problems else "pass",
        problems=problems,
        wall_s=matrix.elapsed_s,
    )
