"""Only a provider fails a provider: a contract's template typo is bad input (exit 2) at
contract.yaml's line, found before any call, and the lock keeps its records."""

from __future__ import annotations

import json

import pytest

from tests.contracts.conftest import Project, provider


@pytest.fixture
def certified(project: Project) -> Project:
    project.write_providers({"primary": provider("conformant"), "second": provider("conformant")})
    assert project.cli("certify", "--no-progress") == 0
    return project


def _typo(project: Project, old: str, new: str) -> None:
    path = project.contract / "contract.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize(("typo", "said"), [
    ("{{ subjct }}", "'subjct' is undefined"),
    ("{subject}", "keeps the placeholder '{subject}'"),
])
def test_a_template_typo_is_exit_2_at_its_line_and_the_lock_is_unchanged(
    certified: Project, capsys, typo: str, said: str
) -> None:
    before = certified.lock_path.read_bytes()
    capsys.readouterr()
    _typo(certified, "{{ subject }}", typo)
    line = next(i for i, text in enumerate(
        (certified.contract / "contract.yaml").read_text().splitlines(), 1) if typo in text)
    assert certified.cli("certify", "--no-progress") == 2
    err = capsys.readouterr().err
    assert f"contract.yaml:{line} (prompt.user)" in err and said in err, err
    assert "\n  fix: " in err and "INELIGIBLE" not in err.upper()
    assert certified.lock_path.read_bytes() == before
    assert certified.cli("gate") == 2  # the gate says the same, blaming no provider
    _typo(certified, typo, "{{ subject }}")
    assert certified.cli("gate") == 0  # fixed: every record still stands, nothing is stale


def test_a_schema_with_an_infinite_number_names_the_file_and_line(
    project: Project, capsys
) -> None:
    project.write_providers({"primary": provider("conformant")})
    path = project.contract / "schema.json"
    schema = json.loads(path.read_text())
    schema["properties"]["confidence"]["maximum"] = "INF"
    text = json.dumps(schema, indent=2).replace('"INF"', "1e999")
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "1e999" in t)
    assert project.cli("gate") == 2
    err = capsys.readouterr().err
    assert f"schema.json:{line}" in err and "1e999 is not a finite number" in err, err
    assert "\n  fix: " in err
