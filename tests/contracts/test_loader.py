"""Loading contracts: the shipped one is complete; every mistake names file, line, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contracts.loader import load_contract, load_contracts
from harness.domain.errors import ConfigError
from tests.contracts.conftest import SHIPPED


def test_the_shipped_contract_is_complete() -> None:
    contract = load_contract(SHIPPED)
    assert contract.id == "ticket_triage" and contract.version == "1.0.0"
    assert len(contract.goldens) >= 10
    languages = {g.language for g in contract.goldens}
    assert {"en", "de", "es", "fr", "ja"} <= languages
    assert contract.business.model is not None and contract.business.function is not None
    assert contract.thresholds.max_temperature == 0.3
    assert contract.compare_rule("confidence").kind == "numeric"
    assert contract.compare_rule("queue").kind == "exact"
    assert contract.hash.startswith("sha256:")
    for golden in contract.goldens:  # the expectations pass their own contract
        assert contract.business.outcome(golden.expected)["queue"]


def _error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_contract(path)
    return info.value


def _edit(project, old: str, new: str, name: str = "contract.yaml") -> None:
    path = project.contract / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_an_unknown_field_names_its_line(project) -> None:
    _edit(project, "  samples: 3", "  samples: 3\n  sampels: 4")
    err = _error(project.contract)
    assert err.file and err.file.endswith("contract.yaml")
    assert err.field == "certification.sampels"
    lines = (project.contract / "contract.yaml").read_text().splitlines()
    assert lines[err.line - 1].strip().startswith("sampels: 4")
    assert err.fix and "remove the field" in err.fix


def test_a_bad_value_names_the_field_and_the_range(project) -> None:
    _edit(project, "pass_threshold: 0.9", "pass_threshold: 1.5")
    err = _error(project.contract)
    assert err.field == "certification.pass_threshold"
    assert "less than or equal to 1" in err.message


def test_a_template_syntax_error_is_reported_at_the_prompt(project) -> None:
    _edit(project, "Subject: {{ subject }}", "Subject: {{ subject }")
    err = _error(project.contract)
    assert err.field == "prompt.user" and "template syntax error" in err.message


def test_a_missing_business_module_names_the_file_to_create(project) -> None:
    (project.contract / "model.py").unlink()
    err = _error(project.contract)
    assert err.field == "business.model" and "model.py" in err.message


def test_a_schema_from_another_draft_is_refused(project) -> None:
    schema = json.loads((project.contract / "schema.json").read_text())
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    (project.contract / "schema.json").write_text(json.dumps(schema))
    err = _error(project.contract)
    assert err.field == "$schema" and "Draft 2020-12" in err.message


def test_a_golden_expectation_that_breaks_the_schema_is_refused(project) -> None:
    _edit(project, "priority: p1", "priority: urgent", "golden/en-outage.yaml")
    err = _error(project.contract)
    assert err.file and err.file.endswith("en-outage.yaml")
    assert "breaks the contract's schema at priority" in err.message


def test_a_golden_expectation_the_business_rules_reject_is_refused(project) -> None:
    _edit(project, "needs_human: true", "needs_human: false", "golden/en-outage.yaml")
    err = _error(project.contract)
    assert "rule 'p1 goes to a human'" in err.message


def test_the_hash_follows_meaning_not_formatting(project) -> None:
    before = load_contract(project.contract).hash
    _edit(project, "# Support-ticket triage", "#   Support-ticket triage, reformatted")
    assert load_contract(project.contract).hash == before
    _edit(project, "max_temperature: 0.3", "max_temperature: 0.4")
    after_threshold = load_contract(project.contract).hash
    assert after_threshold != before
    _edit(project, "SLA_HOURS = {", "SLA_HOURS = {  # tweaked\n", "model.py")
    assert load_contract(project.contract).hash != after_threshold  # business code counts


def test_a_folder_of_contracts_loads_by_id(project, tmp_path) -> None:
    assert list(load_contracts(project.contracts)) == ["ticket_triage"]
    with pytest.raises(ConfigError, match="contracts folder not found"):
        load_contracts(tmp_path / "missing")


def _schema_line(project, needle: str) -> int:
    lines = (project.contract / "schema.json").read_text("utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_a_schema_error_names_its_line_in_schema_json(project) -> None:
    _edit(project, '"tags": {"type": "array"', '"tags": {"type": "arrray"', "schema.json")
    err = _error(project.contract)
    assert err.file and err.file.endswith("schema.json")
    assert err.line == _schema_line(project, '"arrray"')
    assert err.field == "properties.tags.type"  # named like every other file's fields
    assert "not a valid Draft 2020-12 schema" in err.message
    assert f"schema.json:{err.line} (properties.tags.type)" in str(err)
    assert err.fix == ('"type" takes one of array, boolean, integer, null, number, object, '
                       "string, or a list of them — did you mean 'array'?")


def test_a_json_syntax_error_in_the_schema_names_its_line(project) -> None:
    _edit(project, '"type": "object",', '"type": "object",,', "schema.json")
    err = _error(project.contract)
    assert err.line == _schema_line(project, ",,") and "not valid JSON" in err.message


# QA Q10: schema.json errors read `schema.json:LINE (path)` and carry a fix that says what to
# write, for invalid JSON and for an invalid schema alike (never "fix the schema/JSON").
@pytest.mark.parametrize(("old", "new", "needle", "field", "fix"), [
    ('"minimum": 0', '"minimum": "zero"', '"zero"', "properties.confidence.minimum",
     '"minimum" takes a number'),
    ('"pattern": "^[a-z]{2}$"', '"pattern": "^[a-z{2}$"', "[a-z{2}", "properties.language.pattern",
     '"pattern" must be a valid regular expression (unterminated character set'),
    ('"enum": ["p1", "p2", "p3", "p4"]', '"enum": "p1"', '"enum": "p1"', "properties.priority.enum",
     '"enum" takes a list'),
    ('"minLength": 1', '"minLength": -1', '"minLength": -1', "properties.summary.minLength",
     '"minLength" must be at least 0'),
    ('"maxItems": 5}', '"maxItems": 5,}', "5,}", "properties.tags",
     "remove the comma before this point: JSON allows no trailing comma"),
    ('"summary": {', 'summary: {', "summary: {", "properties",
     'write the key in double quotes: "key": value'),
    ('"maxLength": 200}', '"maxLength": 200 "x": 1}', '200 "x"', "properties.summary.maxLength",
     "add the missing comma between the two values"),
    ('"pattern": "^[a-z]{2}$"', '"pattern": "^\\d{2}$"', "^\\d",
     "properties.language.pattern", "escape a backslash as \\\\"),
])
def test_schema_json_errors_name_line_path_and_fix(
    project, old: str, new: str, needle: str, field: str, fix: str
) -> None:
    _edit(project, old, new, "schema.json")
    err = _error(project.contract)
    assert err.file is not None and err.file.endswith("schema.json")
    assert (err.line, err.field) == (_schema_line(project, needle), field), str(err)
    assert err.fix is not None and err.fix.startswith(fix), err.fix
    assert f"schema.json:{err.line} ({field}): " in str(err)


def test_a_golden_expectation_error_names_its_line_in_the_golden_file(project) -> None:
    path = project.contract / "golden" / "en-outage.yaml"
    text = path.read_text("utf-8")
    import re

    new = re.sub(r"priority: \w+", "priority: p9", text, count=1)
    path.write_text(new, "utf-8")
    err = _error(project.contract)
    assert err.file == str(path) and err.field == "expected.priority"
    assert new.splitlines()[err.line - 1].strip().startswith("priority: p9")
