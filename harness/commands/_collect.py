"""Turn the engines' results into the report model (harness.reports), which imports neither.

Scenario runs (with a timeline built from the history), the detection matrix, certification
records and gate standings each become their report dataclass here, in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harness.reports import (
    CertCheck,
    CertReport,
    CheckReport,
    Evidence,
    GateProblem,
    GateReport,
    Lane,
    Matrix,
    MatrixCell,
    ScenarioReport,
    Timeline,
    TimelineEvent,
)

if TYPE_CHECKING:
    from harness.contracts.records import CertificationRecord
    from harness.contracts.standing import Standing
    from harness.scenarios.history import Op
    from harness.scenarios.matrix import Matrix as ScenarioMatrix
    from harness.scenarios.runner import RunResult

VERDICT = {"passed": "passed", "violated": "failed", "unknown": "unknown",
           "not_applicable": "not_applicable"}
# history op name -> timeline mark
MARKS = {"start": "started", "dispatched": "dispatched", "timed_out": "timed_out",
         "failed": "failed", "cancelled": "cancelled", "crash": "crash"}


def timeline_of(history: Sequence[Op], duration: float) -> Timeline | None:
    """A lane per attempt: start, dispatch, timeout, result and claim outcome (virtual time)."""
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


def scenario_report(result: RunResult, *, replay: str | None = None) -> ScenarioReport:
    return ScenarioReport(
        name=result.scenario.name,
        target=result.target,
        verdict=VERDICT[result.status],  # type: ignore[arg-type]
        description=result.scenario.description or "",
        checks=tuple(
            CheckReport(
                c.checker, c.promise, c.verdict,
                tuple(v.message for v in c.violations) + tuple(c.unknowns),
                tuple(sorted({i for v in c.violations for i in v.ops})),
            )
            for c in result.checks
        ),
        timeline=timeline_of(result.history, result.virtual_seconds),
        run_dir=str(result.folder) if result.folder else None,
        replay_command=replay,
        reason=result.reason or "",
        wall_s=result.elapsed_s,
        virtual_s=result.virtual_seconds,
    )


def matrix_report(matrix: ScenarioMatrix) -> Matrix:
    return Matrix(
        scenarios=tuple(matrix.scenarios),
        targets=tuple(matrix.stores),
        cells=tuple(
            MatrixCell(scenario, store, VERDICT[matrix.status(store, scenario)])  # type: ignore[arg-type]
            for scenario in matrix.scenarios
            for store in matrix.stores
        ),
    )


def cert_report(record: CertificationRecord, failover: str = "") -> CertReport:
    p50 = None
    checks = []
    for check in record.checks:
        figure = check.figures.get("latency_p50_s")
        if figure is not None and p50 is None:
            p50 = float(figure) * 1000
        checks.append(CertCheck(
            check.name, "pass" if check.passed else "fail", check.summary,
            tuple(Evidence(e.input_id, e.reason, e.excerpt) for e in check.evidence),
        ))
    return CertReport(
        provider=record.provider, contract=record.contract, verdict=record.verdict,
        model=record.model, kind=record.kind, failover=failover,
        # until the model has a provenance field (r13): a fake says so wherever mode is shown
        mode=f"{record.mode}, {record.provenance}" if record.provenance else record.mode,
        checks=tuple(checks), latency_ms_p50=p50,
    )


def gate_report(standings: Iterable[Standing]) -> GateReport:
    standings = list(standings)
    problems = tuple(
        GateProblem(s.provider, s.contract, str(s.state), s.why, s.fix)
        for s in standings if not s.eligible
    )
    failed = any(p.state == "failed" for p in problems)
    code = 1 if failed else 3 if problems else 0
    verdict = "fail" if failed else "unknown" if problems else "pass"
    return GateReport(verdict, code, problems, links_checked=len(standings))  # type: ignore[arg-type]


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
