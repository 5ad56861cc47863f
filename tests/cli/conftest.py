"""CLI fixtures: a loopback service answering every request the same (shared with the
acceptance tests), and a copy of the shipped workspace."""

import shutil
from pathlib import Path

import pytest

from tests.acceptance.conftest import answering

__all__ = ["answering", "workspace"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the shipped providers.yaml, contracts and scenarios."""
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    return tmp_path
