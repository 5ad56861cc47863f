"""Certifications against fake providers are not labelled "live" (issue 34): the console says
"fake providers" and the report's provider cell "fake provider", beside the provenance."""

from __future__ import annotations

import pytest

from tests.contracts.conftest import Project, provider


def test_a_fake_certification_is_never_called_live(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_providers({"primary": provider(), "fallback": provider()})
    assert project.cli("certify", "--no-progress") == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert header.startswith("certification (fake providers;"), header
    page = (project.root / "reports" / "latest" / "index.html").read_text()
    assert page.count("fake-conformant · fake provider") == 2
    assert " · live · " not in page
