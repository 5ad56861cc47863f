"""Explore fixtures: real SQLite files and PostgreSQL databases, stores opened the way explore
opens them (SQLite busy_timeout 0; mutants without their timed rendezvous), and controllers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.explore.controller import Controller
from harness.explore.target import explore_store
from tests.conftest import BACKENDS

Open = Callable[..., Controller]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'explore.db'}"
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def open_controller(db_url: str) -> Iterator[Open]:
    """``open_controller(mutant=None, commit_steps=False)``: a controller on the reference store
    or a mutant."""
    with ExitStack() as stack:

        def opener(mutant: str | None = None, *, commit_steps: bool = False) -> Controller:
            text = f"mutant:{mutant}@{db_url}" if mutant else db_url
            store, _ = stack.enter_context(explore_store(text))
            return stack.enter_context(Controller(store, commit_steps=commit_steps))

        yield opener


@pytest.fixture
def target_text(db_url: str) -> Callable[[str | None], str]:
    """``target_text(mutant)``: the --target text for the reference store or a mutant."""
    return lambda mutant=None: f"mutant:{mutant}@{db_url}" if mutant else db_url
