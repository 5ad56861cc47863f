"""The scenario engine: scenario files, targets, virtual time, histories, checkers, replay.

::

    scenario.yaml ──loader──▶ Scenario ──runner──▶ History ──checkers──▶ verdicts
                                   │          ▲
                       scheduler (virtual time, ChoiceSource)
                                   │          │
                                   ▼          │
                          Target session (store, mutant, HTTP, profile)

Modules: ``model`` (the scenario as data), ``loader`` (YAML + JSON Schema → model, errors with
file/line/fix), ``scheduler`` (discrete events on a virtual clock; the choice seam),
``targets`` (what is attacked), ``runner`` (steps → ops), ``history`` (invoke → ok | fail |
info), ``checkers`` (pure verdicts), ``runfolder`` / ``replay`` (reproduce a run), ``matrix``
(every scenario × reference and mutants), ``render`` (terminal text), ``arrivals`` (burst,
staggered and straddle groups, seeded) and ``trials`` (N trials per pattern: detection rates;
the report folder renders them, :mod:`harness.reports`). ``targets.preflight`` checks an HTTP
target before any scenario (reachable, every owner's token accepted).
"""

from harness.scenarios.arrivals import ArrivalPlan
from harness.scenarios.checkers import CHECKERS, PROMISES, CheckResult, Violation, run_checkers
from harness.scenarios.history import History, Op, Pair, pairs, read_history
from harness.scenarios.loader import load_scenario, scenario_files, scenario_schema
from harness.scenarios.matrix import Matrix, detection_matrix
from harness.scenarios.model import Scenario, Step
from harness.scenarios.replay import ReplayOutcome, replay
from harness.scenarios.runfolder import read_run, replay_command, write_run
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.scheduler import (
    ChoiceSource,
    Divergence,
    RecordedChoices,
    Scheduler,
    SeededChoices,
)
from harness.scenarios.targets import Target, TargetSession, open_target
from harness.scenarios.trials import Rate, TrialSet, run_trials

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
