"""Every file-format page in docs/ carries a complete example, and the real loaders accept it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def block(page: str, heading: str, lang: str) -> str:
    """The first ```lang block after ``heading`` in docs/<page>."""
    text = (ROOT / "docs" / page).read_text("utf-8")
    assert heading in text, f"docs/{page} lost its {heading!r} section"
    after = text.split(heading, 1)[1]
    match = re.search(rf"```{lang}\n(.*?)\n```", after, re.S)
    assert match, f"docs/{page}: no ```{lang} block after {heading!r}"
    return match.group(1)


def test_the_providers_example_loads(tmp_path: Path) -> None:
    from harness.providers.config import load_providers

    path = tmp_path / "providers.yaml"
    path.write_text(block("providers.md", "## providers.yaml", "yaml"), "utf-8")
    providers = load_providers(path)
    assert providers.providers and providers.chains


def test_the_scenario_example_loads(tmp_path: Path) -> None:
    from harness.scenarios.loader import load_scenario

    path = tmp_path / "example.yaml"
    path.write_text(block("scenarios.md", "## A scenario file", "yaml"), "utf-8")
    scenario = load_scenario(path)
    assert scenario.steps and scenario.checkers


def test_the_target_profile_example_loads(tmp_path: Path) -> None:
    from harness.scenarios.targets.service import load_profile

    path = tmp_path / "profile.yaml"
    path.write_text(block("scenarios.md", "### Target profiles", "yaml"), "utf-8")
    profile = load_profile(path)
    assert profile is not None


def test_the_contract_example_loads(tmp_path: Path) -> None:
    from harness.contracts.loader import load_contract

    folder = tmp_path / "ticket_triage"
    shutil.copytree(ROOT / "contracts" / "ticket_triage", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "contract.yaml").write_text(block("contracts.md", "## A contract", "yaml"), "utf-8")
    golden = block("contracts.md", "A golden case", "yaml")
    (folder / "golden" / "de-rechnung.yaml").write_text(golden, "utf-8")
    contract = load_contract(folder)
    assert contract.id == "ticket_triage" and contract.goldens


def test_the_results_example_validates() -> None:
    from harness.reports.schema import validate_results

    validate_results(json.loads(block("results.md", "## A complete example", "json")))


@pytest.mark.parametrize("page", ["providers.md", "contracts.md", "scenarios.md", "results.md"])
def test_each_format_page_exists(page: str) -> None:
    assert (ROOT / "docs" / page).stat().st_size > 1000
