"""The scenario engine: scenario files, targets, virtual time, histories, checkers, replay.

::

    scenario.yaml ──loader──▶ Scenario ──runner──▶ History ──checkers──▶ verdicts
                                   │          ▲
                       scheduler (virtual time, ChoiceSource)
                                   │          │
                                   ▼          │
                          Target session (store, mutant, HTTP, profile)

Modules: ``model`` (the scenario as data), ``loader`` (YAML + JSON Schema → model, errors with
file/line/fix; ``schema`` explains a schema error, ``builder`` checks the cross-references),
``scheduler`` (discrete events on a virtual clock; the choice seam),
``targets`` (what is attacked), ``runner`` (steps → ops), ``history`` (invoke → ok | fail |
info), ``checkers`` (pure verdicts), ``runfolder`` / ``replay`` (reproduce a run), ``matrix``
(every scenario × reference and mutants), ``render`` (terminal text), ``arrivals`` (burst,
staggered and straddle groups, seeded) and ``trials`` (N trials per pattern: detection rates;
the report folder renders them, :mod:`harness.reports`). ``targets.preflight`` checks an HTTP
target before any scenario (reachable, every owner's token accepted).
"""

from typing import Any as _Any

from harness.domain import lazy as _lazy

# imported lazily, so that importing one module of the room (its events, for the reports)
# does not run the whole engine
_EXPORTS = {
    "ArrivalPlan": "arrivals",
    "CHECKERS": "checkers",
    "CheckResult": "checkers",
    "ChoiceSource": "scheduler",
    "Divergence": "scheduler",
    "History": "history",
    "Matrix": "matrix",
    "Op": "history",
    "PROMISES": "checkers",
    "Pair": "history",
    "Rate": "trials",
    "RecordedChoices": "scheduler",
    "ReplayOutcome": "replay",
    "RunResult": "runner",
    "Scenario": "model",
    "Scheduler": "scheduler",
    "SeededChoices": "scheduler",
    "Step": "model",
    "Target": "targets",
    "TargetSession": "targets",
    "TrialSet": "trials",
    "Violation": "checkers",
    "detection_matrix": "matrix",
    "load_scenario": "loader",
    "open_target": "targets",
    "pairs": "history",
    "read_history": "history",
    "read_run": "runfolder",
    "replay": "replay",
    "replay_command": "runfolder",
    "run_checkers": "checkers",
    "run_scenario": "runner",
    "run_trials": "trials",
    "scenario_files": "loader",
    "scenario_schema": "schema",
    "write_run": "runfolder",
}

__all__ = [
    "CHECKERS",
    "PROMISES",
    "ArrivalPlan",
    "CheckResult",
    "ChoiceSource",
    "Divergence",
    "History",
    "Matrix",
    "Op",
    "Pair",
    "Rate",
    "RecordedChoices",
    "ReplayOutcome",
    "RunResult",
    "Scenario",
    "Scheduler",
    "SeededChoices",
    "Step",
    "Target",
    "TargetSession",
    "TrialSet",
    "Violation",
    "detection_matrix",
    "load_scenario",
    "open_target",
    "pairs",
    "read_history",
    "read_run",
    "replay",
    "replay_command",
    "run_checkers",
    "run_scenario",
    "run_trials",
    "scenario_files",
    "scenario_schema",
    "write_run",
]


def __getattr__(name: str) -> _Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
