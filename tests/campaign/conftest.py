"""Entry points run with no CLI and no working directory of their own: the tests run them from an
empty folder that must stay empty (every path they use is given to them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory; still empty after the test."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    # .hypothesis/: Hypothesis's own cache of constants (the shrinker imports it), not ours
    written = [p.name for p in cwd.iterdir() if p.name != ".hypothesis"]
    assert written == [], "an entry point wrote into the working directory"
