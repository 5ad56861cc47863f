"""What a release manager sees of `certify` and `gate` in the report folder (QA finding Q22).

The headline of summary.md (the part of a pull-request comment that is not folded) says when the
eligible links are fake providers, and so does `gate`, in every rendering; summary.md carries the
drift; index.html's start time is the certification's, not the moment it finished.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contracts.records import FAKE_PROVENANCE
from tests.contracts.conftest import Project, provider
from tests.contracts.test_statistics import flaky_anthropic


def _latest(project: Project) -> Path:
    return project.root / "reports" / "latest"


def _visible(summary: str) -> str:
    """The part of summary.md a reader sees without unfolding anything."""
    return summary.split("<details>")[0]


def test_the_headline_says_the_eligible_links_are_fakes(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_providers({
        "primary": provider(),
        "fallback": provider(kind="anthropic-messages"),
        "standby": provider("prose"),
    }, [("primary", "auto"), ("fallback", "auto"), ("standby", "manual")])
    assert project.cli("certify", "--no-progress") == 0
    summary = (_latest(project) / "summary.md").read_text("utf-8")
    assert ("**Certification:** 2 of 3 eligible — all fake providers (answers from the golden "
            "file): not evidence about a model") in _visible(summary)
    results = json.loads((_latest(project) / "results.json").read_text("utf-8"))
    lock = json.loads(project.lock_path.read_text("utf-8"))
    started = results["started_at"]
    assert all(started <= r["certified_at"] for r in lock["certifications"])  # opened first
    capsys.readouterr()

    assert project.cli("gate") == 0
    out = capsys.readouterr().out
    for pid in ("primary", "fallback"):
        note = (f"note: certified {pid!r} for 'ticket_triage': {FAKE_PROVENANCE}, not evidence "
                "about a model")
        assert note in out
    folder = _latest(project)
    summary = (folder / "summary.md").read_text("utf-8")
    assert "**Gate:** ✅ pass (2 auto links) — all fake providers" in _visible(summary)
    assert "- ➖ 'fallback' for 'ticket_triage': fake provider" in _visible(summary)
    for name in ("results.json", "junit.xml", "index.html"):
        assert f"'fallback' for 'ticket_triage': {FAKE_PROVENANCE}" in (
            folder / name).read_text("utf-8").replace("&#x27;", "'").replace("&#39;", "'"), name


def test_summary_md_shows_the_drift(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_providers({"primary": provider(),
                             "fallback": provider(kind="anthropic-messages")})
    assert project.cli("certify", "--no-progress") == 0
    flaky_anthropic(monkeypatch, 3)  # every third answer breaks: a real change
    assert project.cli("certify", "--no-progress") == 1
    summary = (_latest(project) / "summary.md").read_text("utf-8")
    drift = _visible(summary).split("### Drift since the last certification")[1]
    assert "fallback × ticket_triage: all inputs: 60/60 → 40/60: worse beyond sampling noise" \
        in drift
    assert "new failure: hallucinated key 'note'" in drift
