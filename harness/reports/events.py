"""Re-exports, until every branch imports them from their rooms: the engines' events (scenario
runs, trial series, the detection matrix and replay comparisons from
:mod:`harness.scenarios.events`, explore results from :mod:`harness.explore.events`) and the
generic ``Case`` from :mod:`harness.reports.model`. Delete when nothing imports this module.
"""

from __future__ import annotations

from harness.domain.verdicts import CheckVerdict as CheckVerdict
from harness.domain.verdicts import Outcome as Outcome
from harness.domain.verdicts import ScenarioVerdict as ScenarioVerdict
from harness.domain.verdicts import Verdict as Verdict
from harness.explore.events import ExploreResult as ExploreResult
from harness.explore.events import ScheduleStep as ScheduleStep
from harness.reports.model import Case as Case
from harness.scenarios.events import Check as Check
from harness.scenarios.events import DetectionMatrix as DetectionMatrix
from harness.scenarios.events import FirstFailure as FirstFailure
from harness.scenarios.events import Lane as Lane
from harness.scenarios.events import LoserCount as LoserCount
from harness.scenarios.events import MatrixCell as MatrixCell
from harness.scenarios.events import PatternSummary as PatternSummary
from harness.scenarios.events import Rate as Rate
from harness.scenarios.events import ReplayComparison as ReplayComparison
from harness.scenarios.events import ScenarioRun as ScenarioRun
from harness.scenarios.events import Timeline as Timeline
from harness.scenarios.events import TimelineEvent as TimelineEvent
from harness.scenarios.events import TrialFailure as TrialFailure
from harness.scenarios.events import TrialSeries as TrialSeries
from harness.scenarios.events import Unknown as Unknown
from harness.scenarios.events import UnknownCount as UnknownCount
from harness.scenarios.events import UnrunStep as UnrunStep
from harness.scenarios.events import Violation as Violation
