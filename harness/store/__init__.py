"""Stores: the Store protocol, the reference SQLite and PostgreSQL stores, and ``open_store``."""

from __future__ import annotations

from typing import Any

from harness.domain import UnsupportedTarget
from harness.domain.redaction import redact_dsn
from harness.store.base import Store, apply_event
from harness.store.postgres import PostgresStore
from harness.store.sqlite import SqliteStore, sqlite_path_from_url
from harness.store.sqlstore import SqlStore, random_ids

SUPPORTED_SCHEMES = ("sqlite:///", "postgresql://", "postgres://")


def open_store(url: str, **options: Any) -> SqlStore:
    """Open the reference store at ``url``: ``sqlite:///path`` or ``postgresql://…``.

    ``options`` go to the store: ``clock``, ``ids``, and ``busy_timeout_ms`` (SQLite) or
    ``pool_size`` and ``keep_prepared`` (PostgreSQL).
    """
    if url.startswith("sqlite:"):
        return SqliteStore(sqlite_path_from_url(url), **options)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url, **options)
    raise UnsupportedTarget(
        f"unsupported store URL {redact_dsn(url)!r}; use sqlite:///path/to/file.db or "
        "postgresql://user@host:port/dbname"
    )


__all__ = ["SUPPORTED_SCHEMES", "SqlStore", "Store", "apply_event", "open_store", "random_ids"]
