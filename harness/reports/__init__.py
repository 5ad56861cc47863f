"""Reports: one result model (``RunReport``), rendered as JSON, Markdown, JUnit XML and HTML."""

from harness.reports.html import render_html
from harness.reports.junit import render_junit
from harness.reports.markdown import render_markdown
from harness.reports.model import (
    SCHEMA,
    CertCheck,
    CertReport,
    CheckReport,
    Evidence,
    GateProblem,
    GateReport,
    Lane,
    Matrix,
    MatrixCell,
    RunReport,
    ScenarioReport,
    Timeline,
    TimelineEvent,
)
from harness.reports.writer import write_report

__all__ = [
    "SCHEMA",
    "CertCheck",
    "CertReport",
    "CheckReport",
    "Evidence",
    "GateProblem",
    "GateReport",
    "Lane",
    "Matrix",
    "MatrixCell",
    "RunReport",
    "ScenarioReport",
    "Timeline",
    "TimelineEvent",
    "render_html",
    "render_junit",
    "render_markdown",
    "write_report",
]
