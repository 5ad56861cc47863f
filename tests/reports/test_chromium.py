"""The HTML report in a real headless Chromium: it loads offline and shows what matters."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.reports import write_report
from tests.reports.sample import sample_report

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "reports" / "screenshots"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("HARNESS_REQUIRE_CHROMIUM") == "1":
            pytest.fail("HARNESS_REQUIRE_CHROMIUM=1 but chromium is not installed")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    return found


def run_chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_a_failing_report_renders_in_chromium(tmp_path: Path) -> None:
    folder = write_report(sample_report(), tmp_path / "reports")
    dom = run_chromium("--dump-dom", (folder / "index.html").as_uri(),
                       profile=tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "failover-harness check: FAIL" in html
    assert 'id="gate-problems"' in html and "local-llama" in html
    assert "failover-harness replay reports/runs/x" in html


def test_the_main_jobs_report_renders_in_chromium_with_verdicts_table_matrix_and_timelines(
    tmp_path: Path,
) -> None:
    from harness.cli import main

    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert main(["check", "--providers", str(tmp_path / "providers.yaml"), "--scenarios",
                 str(ROOT / "scenarios"), "--report-dir", str(tmp_path / "reports"),
                 "--quiet"]) == 0
    page = (tmp_path / "reports" / "latest" / "index.html").resolve().as_uri()
    dom = run_chromium("--dump-dom", page, profile=tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "failover-harness check: PASS" in html
    assert 'id="certification"' in html and "anthropic-fallback" in html
    assert 'id="matrix"' in html and "check-then-insert" in html and "owner-leak" in html
    assert html.count('class="timeline"') >= 11 and "mark-dispatched" in html
    assert "mark-created" in html and "mark-replayed" in html and "mark-refused" in html
    assert "mark-won" in html and "mark-lost" in html and "mark-timed_out" in html

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "report-index.png"
    result = run_chromium(f"--screenshot={shot}", "--window-size=1280,2400", page,
                          profile=tmp_path / "profile2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    print(f"screenshot saved: {shot}")
