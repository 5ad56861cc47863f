"""Every rendering of one result model: JSON, Markdown, JUnit (schema-valid) and HTML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.reports import SCHEMA, render_html, render_junit, render_markdown, write_report
from tests.reports.sample import sample_report

HERE = Path(__file__).parent


def test_results_json_is_versioned_and_round_trips() -> None:
    data = json.loads(json.dumps(sample_report().to_json()))
    assert data["schema"] == SCHEMA
    assert data["verdict"] == "fail" and data["exit_code"] == 1
    assert data["scenarios"][0]["timeline"]["lanes"][1]["outcome"] == "won"
    assert data["gate"]["problems"][1]["state"] == "missing"


def test_junit_validates_against_the_junit_schema() -> None:
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(HERE / "junit.xsd"))
    for broken in (True, False):
        schema.validate(render_junit(sample_report(broken=broken)))


def test_junit_has_a_case_per_scenario_and_per_check_with_evidence() -> None:
    root = ET.fromstring(render_junit(sample_report()))
    cases = root.findall(".//testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert ("scenarios.mutant:check-then-insert", "double_click") in names
    assert ("certification.ticket_triage.anthropic-fallback", "schema") in names
    failure = next(c for c in cases if c.get("name") == "schema" and c.find("failure") is not None)
    assert "hallucinated key 'confidence'" in (failure.find("failure").text or "")  # type: ignore[union-attr]
    double = next(c for c in cases if c.get("name") == "double_click")
    assert "failover-harness replay" in (double.find("failure").text or "")  # type: ignore[union-attr]
    skipped = next(c for c in cases if c.get("name") == "triple_click_across_replicas")
    assert skipped.find("skipped") is not None
    assert root.get("failures") == str(sum(1 for c in cases if c.find("failure") is not None))


def test_markdown_summary_fits_a_comment_and_names_the_fix() -> None:
    text = render_markdown(sample_report())
    assert text.startswith("## failover-harness check: ❌ FAIL")
    assert "failover-harness certify --providers providers.yaml" in text
    assert "Mutants caught: 2 of 2" in text
    assert len(text) < 65_000  # GitHub's comment limit


def test_html_is_self_contained_and_escapes_what_it_shows() -> None:
    report = sample_report()
    html = render_html(report)
    assert "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    ) and "https://" not in html
    for anchor in ('id="verdict"', 'id="certification"', 'id="matrix"', 'id="scenarios"',
                   'class="timeline"'):
        assert anchor in html
    assert "&#34;confidence&#34;" in html or "&quot;confidence&quot;" in html


def test_write_report_makes_a_run_folder_and_points_latest_at_it(tmp_path: Path) -> None:
    first = write_report(sample_report(), tmp_path)
    second = write_report(sample_report(broken=False), tmp_path)
    assert sorted(p.name for p in second.iterdir()) == sorted(
        ["results.json", "junit.xml", "summary.md", "index.html"]
    )
    assert (tmp_path / "latest").resolve() == second.resolve() != first.resolve()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_shipped_results_schema_matches_the_model() -> None:
    from harness.reports.schema import results_json_schema, shipped_schema

    assert shipped_schema() == json.loads(json.dumps(results_json_schema())), (
        "regenerate: python -m harness.reports.schema > harness/reports/results.schema.json"
    )


def test_results_json_validates_and_a_broken_one_does_not() -> None:
    import jsonschema

    from harness.reports.schema import validate_results

    document = json.loads(json.dumps(sample_report().to_json()))
    validate_results(document)
    document["scenarios"][0]["verdict"] = "sort-of"
    with pytest.raises(jsonschema.ValidationError):
        validate_results(document)
