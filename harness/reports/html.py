"""``index.html``: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

from functools import cache

import jinja2

from harness.reports.model import RunReport
from harness.reports.timeline import COLOURS, render_svg


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("index.html.j2")


def render_html(report: RunReport) -> str:
    names: list[str] = []
    for cert in report.certifications:
        for check in cert.checks:
            if check.name not in names:
                names.append(check.name)
    matrix = report.matrix
    mutants = [t for t in matrix.targets if t != matrix.reference] if matrix else []
    return _template().render(
        r=report,
        check_names=names,
        svg=render_svg,
        colours={k: COLOURS[k] for k in ("started", "dispatched", "timed_out", "result", "won",
                                         "lost", "failed", "cancelled", "crash", "created",
                                         "replayed", "refused")},
        mutants=len(mutants),
        caught=sum(1 for t in mutants if matrix and matrix.caught(t)),
        ref_flagged=bool(matrix and matrix.caught(matrix.reference)),
    )
