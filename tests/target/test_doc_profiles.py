"""The complete example profiles of docs/scenarios.md (body templates, owners) and docs/check.md
(both halves, provider calls as side effects) load with the real loaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.target.drill_profile import load_drill
from harness.target.model import load_profile
from tests.docs.test_doc_examples import block


@pytest.mark.parametrize(("page", "heading"), [
    ("scenarios.md", "#### Body templates"),
    ("scenarios.md", "#### Owners: how the service is told who asks\n"),
    ("check.md", "### Your service's own API, and its providers, in one run"),
])
def test_the_example_profile_loads(tmp_path: Path, page: str, heading: str) -> None:
    text = block(page, heading, "yaml")
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    profile = load_profile(path)
    assert profile.operations["create_job"].body is not None
    if profile.drill is not None:
        assert load_drill(path).section.submit.path == "/jobs"
