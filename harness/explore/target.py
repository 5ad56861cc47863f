"""Open what ``--target`` names, the way explore needs it.

The syntax is the scenario engine's (``sqlite``, ``sqlite:///file.db``, ``postgresql://…``,
``mutant:<name>[@<database URL>]``, ``http://…``), parsed by
:func:`harness.scenarios.targets.open_target`. For the controlled search explore opens the store
itself: SQLite with ``busy_timeout = 0`` (SQLITE_BUSY is immediate, so the controller decides who
retries), PostgreSQL with a small pool (the workers bring their own sessions), and a mutant's
race window at zero (the controller, not a timed rendezvous, decides the interleaving).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.domain import StoreError, UnsupportedTarget
from harness.domain.errors import ConfigError
from harness.scenarios.targets import Target, open_target
from harness.scenarios.targets.base import redact
from harness.scenarios.targets.stores import StoreTarget
from harness.store import SqlStore, open_store
from harness.store.mutants import open_mutant


def parse_target(text: str | None, **options: Any) -> Target:
    """The target ``text`` names (exit 2 on a bad one), not yet opened."""
    return open_target(text, **options)


def describe(text: str | None) -> str:
    """The target as it may be printed and written to a repro (no password)."""
    target = parse_target(text)
    try:
        return target.description
    finally:
        target.close()


def is_postgres(store: SqlStore) -> bool:
    return getattr(store, "backend", "") == "postgres"


@contextmanager
def explore_store(text: str | None) -> Iterator[tuple[SqlStore, str]]:
    """Open the store ``text`` names for the controller; yield it and its printable name."""
    service = (text or "").strip().startswith(("http://", "https://"))
    target = None if service else parse_target(text)
    if not isinstance(target, StoreTarget):
        if target is not None:
            target.close()
        raise UnsupportedTarget(
            f"explore steps through the SQL statements of a store it opens itself; "
            f"{redact(text or '')!r} is a service it cannot see inside. Explore it with "
            "--stress (free-running threads, checked but not replayable), or point --target at "
            "sqlite, sqlite:///file.db, postgresql://… or mutant:<name>[@<db url>]"
        )
    description = target.description
    folder: tempfile.TemporaryDirectory[str] | None = None
    url = target.url
    if url is None:
        folder = tempfile.TemporaryDirectory(prefix="harness-explore-")
        url = f"sqlite:///{Path(folder.name) / 'explore.db'}"
    options: dict[str, Any] = (
        {"pool_size": 2, "keep_prepared": True} if url.startswith("postgres")
        else {"busy_timeout_ms": 0})
    try:
        try:
            store = (open_mutant(target.mutant, url, **options) if target.mutant
                     else open_store(url, **options))
        except StoreError as exc:
            raise ConfigError(
                f"cannot open the target database: {exc.message}", field="--target",
                fix="check that the database is running and the URL is right",
            ) from None
        if hasattr(store, "race_window_s"):
            store.race_window_s = 0.0
        try:
            yield store, description
        finally:
            store.close()
    finally:
        if folder is not None:
            folder.cleanup()
