"""The drill's results@2 events (defined beside the other event types in
:mod:`harness.reports.drill_events`, so that the reports import no engine)."""

from harness.reports.drill_events import (
    DrilledIntent,
    DrillFinding,
    DrillRun,
    DrillVerdict,
    FindingVerdict,
    PromiseRate,
)

__all__ = ["DrillFinding", "DrillRun", "DrillVerdict", "DrilledIntent", "FindingVerdict",
           "PromiseRate"]
