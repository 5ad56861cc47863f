"""Reports: one result model (``results@2``: typed events), consumed by handlers — the live CLI
output, and the report folder's JSON, JUnit XML, Markdown and HTML renderings.

See :mod:`harness.reports.session` for how a command emits events and writes the folder, and
docs/results.md for the document.
"""

from typing import Any as _Any

from harness.domain import lazy as _lazy

# imported lazily, so that importing one module of the room (the CLI's redaction, say) does
# not import every renderer and the result model with every engine's events
_EXPORTS = {
    "Case": "model",
    "CertCheck": "model",
    "Certification": "model",
    "Check": "model",
    "DetectionMatrix": "model",
    "Drift": "model",
    "Event": "model",
    "Evidence": "model",
    "ExploreResult": "model",
    "FILES": "session",
    "FirstFailure": "model",
    "FolderWriter": "session",
    "GateProblem": "model",
    "GateVerdict": "model",
    "Handler": "session",
    "Header": "session",
    "JsonOut": "session",
    "JunitFile": "session",
    "Lane": "model",
    "LiveOutput": "live",
    "LoserCount": "model",
    "MatrixCell": "model",
    "PatternSummary": "model",
    "Rate": "model",
    "ReplayComparison": "model",
    "ReportSession": "session",
    "Results": "model",
    "SCHEMA": "model",
    "Sampling": "model",
    "ScenarioRun": "model",
    "ScheduleStep": "model",
    "Statistic": "model",
    "Timeline": "model",
    "TimelineEvent": "model",
    "TrialFailure": "model",
    "TrialSeries": "model",
    "Unknown": "model",
    "UnknownCount": "model",
    "UnrunStep": "model",
    "Violation": "model",
    "render_html": "html",
    "render_json": "session",
    "render_junit": "junit",
    "render_markdown": "markdown",
    "write_report": "session",
}

__all__ = [
    "FILES",
    "SCHEMA",
    "Case",
    "CertCheck",
    "Certification",
    "Check",
    "DetectionMatrix",
    "Drift",
    "Event",
    "Evidence",
    "ExploreResult",
    "FirstFailure",
    "FolderWriter",
    "GateProblem",
    "GateVerdict",
    "Handler",
    "Header",
    "JsonOut",
    "JunitFile",
    "Lane",
    "LiveOutput",
    "LoserCount",
    "MatrixCell",
    "PatternSummary",
    "Rate",
    "ReplayComparison",
    "ReportSession",
    "Results",
    "Sampling",
    "ScenarioRun",
    "ScheduleStep",
    "Statistic",
    "Timeline",
    "TimelineEvent",
    "TrialFailure",
    "TrialSeries",
    "Unknown",
    "UnknownCount",
    "UnrunStep",
    "Violation",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "write_report",
]


def __getattr__(name: str) -> _Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
