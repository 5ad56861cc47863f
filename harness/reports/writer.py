"""Write a run folder ``reports/<UTC time>/`` with every rendering, and point ``latest`` at it.

The folder is written under a temporary name and renamed into place, so a reader never sees a
half-written report; ``latest`` is a relative symlink replaced atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from harness.reports.html import render_html
from harness.reports.junit import render_junit
from harness.reports.markdown import render_markdown
from harness.reports.model import RunReport

FILES = ("results.json", "junit.xml", "summary.md", "index.html")


def write_report(report: RunReport, root: Path, *, now: datetime | None = None) -> Path:
    """Render ``report`` into a new folder under ``root``; return the folder."""
    root.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    final = root / stamp
    staging = Path(tempfile.mkdtemp(prefix=f".{stamp}-", dir=root))
    try:
        (staging / "results.json").write_text(
            json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", "utf-8"
        )
        (staging / "junit.xml").write_text(render_junit(report), "utf-8")
        (staging / "summary.md").write_text(render_markdown(report), "utf-8")
        (staging / "index.html").write_text(render_html(report), "utf-8")
        staging.chmod(0o755)
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    link = root / "latest"
    tmp_link = root / f".latest-{stamp}"
    tmp_link.symlink_to(final.name)
    os.replace(tmp_link, link)
    return final
