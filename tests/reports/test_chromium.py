"""The HTML report in a real headless Chromium: it loads offline, and the browser lays out the
losers' histograms, the timeline of each first failing trial and explore's lane diagram (asked of
the rendered DOM over the DevTools protocol, not read from the template)."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.reports import write_report
from tests.reports.browser import layout, run_chromium
from tests.reports.sample import TRIAL_REPLAY, sample_results

ROOT = Path(__file__).resolve().parents[2]


def test_the_histogram_and_the_first_failing_trial_are_laid_out(tmp_path: Path) -> None:
    folder = write_report(sample_results(), tmp_path / "reports")
    page = layout(folder / "index.html", tmp_path / "profile")
    assert page["verdict"] == "failover-harness check: FAIL"
    burst = next(h for h in page["histograms"] if h["pattern"] == "burst")
    assert burst["visible"]
    bars = {b["answer"]: b for b in burst["bars"]}
    assert bars["same job"]["count"] == 100 and bars["created again"]["kind"] == "bar-refused"
    # drawn to scale: 100 answers make the longest bar, 18 about a fifth of it
    assert bars["same job"]["width"] > bars["created"]["width"] > bars["created again"]["width"]
    assert abs(bars["created again"]["width"] / bars["same job"]["width"] - 0.18) < 0.02
    first = page["first_failures"][0]
    assert "burst, trial 2 of 20 (seed 1)" in first["title"]
    assert first["timeline"]["visible"] and first["timeline"]["lanes"] == 3
    assert first["timeline"]["marks"].count("mark-created") == 2
    assert TRIAL_REPLAY in first["text"] and "2 side effects for one click" in first["text"]
    assert "18 of 20" in page["rates"] and "0 of 20" in page["rates"]
    assert page["lanes"][0]["visible"] and page["lanes"][0]["marks"] == 4
    assert sum("one_side_effect_per_click" in p for p in page["problems"]) == 1  # once
    assert any(TRIAL_REPLAY in p for p in page["problems"])  # one replay per promise


def test_the_main_jobs_report_renders_with_verdicts_table_matrix_and_timelines(
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

    shot = tmp_path / "report-index.png"  # in the test's folder: nothing in the checkout
    result = run_chromium(f"--screenshot={shot}", "--window-size=1280,2400", page,
                          profile=tmp_path / "profile2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    print(f"screenshot saved: {shot}")
