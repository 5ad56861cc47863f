"""Every rendering of one result model: JSON (schema-valid, round trip), JUnit (XSD-valid, a case
per scenario × target and per checker × pattern), Markdown (one screen) and HTML; the session's
handlers and the report folder; secrets scrubbed before any handler sees an event."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.reports import (
    SCHEMA,
    Case,
    FolderWriter,
    JsonOut,
    JunitFile,
    LiveOutput,
    ReportSession,
    Results,
    ScenarioRun,
    render_html,
    render_junit,
    render_markdown,
    write_report,
)
from harness.reports.schema import validate_results
from tests.reports.sample import REPLAY, TRIAL_REPLAY, sample_results

HERE = Path(__file__).parent


def test_results_json_is_versioned_validates_and_round_trips() -> None:
    data = json.loads(json.dumps(sample_results().to_json()))
    validate_results(data)
    assert data["schema"] == SCHEMA == "failover-harness/results@2"
    assert data["verdict"] == "fail" and data["exit_code"] == 1
    types = [e["type"] for e in data["events"]]
    assert types[:5] == ["scenario_run"] * 4 + ["trial_series"]
    assert {"detection_matrix", "explore_result", "certification", "gate", "case"} <= set(types)
    assert Results.from_json(data) == sample_results()


def test_a_broken_results_document_does_not_validate() -> None:
    import jsonschema

    document = json.loads(json.dumps(sample_results().to_json()))
    document["events"][0]["verdict"] = "sort-of"
    with pytest.raises(jsonschema.ValidationError):
        validate_results(document)
    document = json.loads(json.dumps(sample_results().to_json()))
    document["events"][0]["type"] = "rumour"
    with pytest.raises(jsonschema.ValidationError):
        validate_results(document)


def test_the_shipped_results_schema_matches_the_model() -> None:
    from harness.reports.schema import results_json_schema, shipped_schema

    assert shipped_schema() == json.loads(json.dumps(results_json_schema())), (
        "regenerate: python -m harness.reports.schema > harness/reports/results.schema.json"
    )


def test_junit_validates_against_the_junit_schema() -> None:
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(HERE / "junit.xsd"))
    for broken in (True, False):
        schema.validate(render_junit(sample_results(broken=broken)))


def test_junit_names_each_promise_with_its_rate_first_trial_and_replay() -> None:
    root = ET.fromstring(render_junit(sample_results()))
    cases = root.findall(".//testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert ("scenarios.mutant-check-then-insert", "double_click") in names
    assert ("certification.ticket_triage.anthropic-fallback", "schema") in names
    detection = "detection.service.duplicate_arrivals"  # names, not URLs
    for checker in ("one_job_per_intent", "one_side_effect_per_click"):
        for pattern in ("burst", "staggered"):
            assert (detection, f"{checker} [{pattern}]") in names
    burst = next(c for c in cases if c.get("name") == "one_side_effect_per_click [burst]")
    failure = burst.find("failure")
    assert failure is not None
    assert "one click, one side effect" in failure.get("message", "")
    assert "18 of 20 trials made a second side effect" in failure.get("message", "")
    assert "first seen in burst, trial 2 of 20 (seed 1)" in (failure.text or "")
    assert f"run this trial again: {TRIAL_REPLAY}" in (failure.text or "")
    staggered = next(c for c in cases if c.get("name") == "one_side_effect_per_click [staggered]")
    assert staggered.find("failure") is None
    double = next(c for c in cases if c.get("name") == "double_click")
    assert f"reproduce: {REPLAY}" in (double.find("failure").text or "")  # type: ignore[union-attr]
    unknown = next(c for c in cases if c.get("name") == "timeout_unknown")
    error = unknown.find("error")
    assert error is not None and "raise the profile's timeout_s" in (error.text or "")
    skipped = next(c for c in cases if c.get("name") == "triple_click_across_replicas")
    assert skipped.find("skipped") is not None
    assert root.get("failures") == str(sum(1 for c in cases if c.find("failure") is not None))


def test_markdown_fits_one_screen_and_names_what_broke_and_the_commands() -> None:
    text = render_markdown(sample_results())
    assert text.startswith("## failover-harness check: ❌ FAIL")
    assert "**Mutants caught:** 2 of 2" in text
    # grouped by promise: each broken promise once, with where and how often, one replay
    assert text.count("**one_side_effect_per_click**") == 1 and "burst 18 of 20" in text
    assert "**Verdict:** ❌ FAIL (exit 1)" in text
    assert REPLAY in text and TRIAL_REPLAY in text
    assert "the timeout step did not run" in text and "raise the profile's timeout_s" in text
    head = text.split("<details>")[0]
    assert len(head.splitlines()) <= 40, head  # a screen: the rest is folded


def test_html_is_self_contained_and_escapes_what_it_shows() -> None:
    html = render_html(sample_results())
    assert "<script" not in html and "<link" not in html and "url(" not in html
    assert not re.search(r"""(src|href)=["']?https?:""", html)  # nothing fetched, no network
    for anchor in ('id="verdict"', 'id="certification"', 'id="matrix"', 'id="scenarios"',
                   'id="detection"', 'id="explore"', 'class="histogram"', 'class="timeline"',
                   'class="timeline lanes"'):
        assert anchor in html
    assert "&#34;confidence&#34;" in html or "&quot;confidence&quot;" in html


def test_a_session_feeds_every_handler_and_writes_the_folder(tmp_path: Path) -> None:
    live, json_out = io.StringIO(), io.StringIO()
    session = ReportSession("check", report_dir=tmp_path / "reports")
    writer = FolderWriter(session)
    session.handlers = [writer, JunitFile(tmp_path / "ci" / "junit.xml"), JsonOut(json_out),
                        LiveOutput(live, folder=lambda: writer.written)]
    session.start(invocation="failover-harness check", targets=["sqlite"])
    for event in sample_results().events[:4]:
        session.emit(event)
    assert "VIOLATED  double_click" in live.getvalue()  # printed as it came, before the end
    assert session.finish() == 1
    folder = writer.written
    assert folder is not None and folder.parent == tmp_path / "reports"
    assert sorted(p.name for p in folder.iterdir()) == [
        "index.html", "junit.xml", "results.json", "summary.md"]
    assert (tmp_path / "reports" / "latest").resolve() == folder.resolve()
    assert (tmp_path / "ci" / "junit.xml").read_text() == (folder / "junit.xml").read_text()
    assert json.loads(json_out.getvalue()) == json.loads((folder / "results.json").read_text())
    assert live.getvalue().rstrip().endswith("check: FAIL (exit 1)")
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]


def test_write_report_makes_a_new_folder_each_time_and_points_latest_at_it(
        tmp_path: Path) -> None:
    first = write_report(sample_results(), tmp_path)
    second = write_report(sample_results(broken=False), tmp_path)
    assert first != second and (tmp_path / "latest").resolve() == second.resolve()


def test_secrets_are_scrubbed_before_any_handler_sees_an_event(tmp_path: Path) -> None:
    from harness.providers.secrets import register_secret
    from harness.reports.redaction import register_target_secrets

    register_secret("tok-s3cr3t-alice")
    register_target_secrets("postgresql://app:pw-Hunter2x@db.internal:5432/jobs")
    live = io.StringIO()
    session = ReportSession("check", report_dir=tmp_path, handlers=[LiveOutput(live)])
    event = session.emit(ScenarioRun(
        "double_click", "postgresql://app:pw-Hunter2x@db.internal:5432/jobs", "broken", "fail",
        reason="Authorization: Bearer tok-s3cr3t-alice",
        replay_command="failover-harness replay r --target "
                       "'host=db password=pw-Hunter2x dbname=jobs'"))
    session.emit(Case("drill", "token", "fail", "sent tok-s3cr3t-alice"))
    session.finish()
    text = json.dumps(session.results.to_json() if session.results else {}) + live.getvalue()
    assert "pw-Hunter2x" not in text and "tok-s3cr3t-alice" not in text
    assert isinstance(event, ScenarioRun)
    assert event.target == "postgresql://app@db.internal:5432/jobs"
    assert event.replay_command == "failover-harness replay r --target 'host=db dbname=jobs'"


def test_a_diverged_replay_of_a_found_race_says_where_it_left_the_recording() -> None:
    from dataclasses import replace

    from harness.explore.events import ExploreResult
    from harness.reports.live import explore_lines

    results = sample_results()
    found = next(e for e in results.events if isinstance(e, ExploreResult))
    assert "replayed once: identical" in list(explore_lines(found))
    where = "schedule event #3: recorded 'tab1: SET lock' now 'tab2: SET lock'"
    diverged = replace(found, replayed_identical=False, replay_divergence=where)
    assert f"replayed once: DIVERGED: {where}" in list(explore_lines(diverged))
    html = render_html(replace(results, events=(diverged,)))
    assert "diverged (schedule event #3: recorded &#39;tab1" in html
