"""Targets: what a scenario runs against, parsed from ``--target``.

==================================  ==========================================================
``sqlite`` (default)                the reference store on a temporary SQLite file
``sqlite:///path/file.db``          the reference store on that file (WAL: threads really race)
``postgresql://user@host/db``       the reference store on PostgreSQL
``mutant:<name>``                   a mutant on a temporary SQLite file
``mutant:<name>@<database URL>``    a mutant on that database
``http://host:port[,http://…]``     a service speaking API.md (replicas, comma-separated);
                                    with ``--target-profile``, any service the profile maps
==================================  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from harness.domain.errors import UnsupportedTarget
from harness.scenarios.targets.base import Reply, Target, TargetSession, redact
from harness.scenarios.targets.http import HttpTarget
from harness.scenarios.targets.service import ProfileTarget
from harness.scenarios.targets.stores import StoreTarget

_HOST_PORT = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}(?:/\S*)?$")
TARGET_HELP = (
    "sqlite (default: a temporary file), sqlite:///file.db, postgresql://…, "
    "mutant:<name>[@<db url>], http://host:port[,http://host:port…]"
)


def open_target(
    text: str | None,
    *,
    tokens_file: str | Path | None = None,
    profile: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    race_digest: str = "none",
) -> Target:
    """The target ``text`` names (see the module docstring); errors are exit-2 input errors.
    ``race_digest``: for an API.md service (no profile) known to digest lost payloads like the
    reference (``sha256-rfc8785``); a profile says it with ``race_digest:``."""
    text = (text or "sqlite").strip()
    if all(_HOST_PORT.match(part.strip()) for part in text.split(",")):  # no scheme
        urls = ",".join(f"http://{part.strip()}" for part in text.split(","))
        raise UnsupportedTarget(
            f"target {redact(text)!r} has no scheme: a service's URL starts with http:// (or "
            f"https://); write --target {redact(urls)}")
    if profile is not None and not text.startswith(("http://", "https://")):
        raise UnsupportedTarget(
            "--target-profile describes an HTTP service; pass --target http://host:port with it"
        )
    if text == "sqlite":
        return StoreTarget(None)
    if text.startswith(("sqlite:", "postgresql://", "postgres://")):
        if text.startswith("sqlite:") and not text.startswith("sqlite:///"):
            raise UnsupportedTarget(
                f"{text!r} is not a SQLite URL; write sqlite:///relative/file.db or "
                "sqlite:////absolute/file.db (or just sqlite for a temporary file)"
            )
        return StoreTarget(text)
    if text.startswith("mutant:"):
        name, _, database = text[len("mutant:"):].partition("@")
        if database and not database.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise UnsupportedTarget(
                f"mutant database {redact(database)!r} is not supported; write "
                f"mutant:{name}@sqlite:///file.db or mutant:{name}@postgresql://…"
            )
        return StoreTarget(database or None, mutant=name)
    if text.startswith(("http://", "https://")):
        if profile is not None:
            return ProfileTarget(text, profile, tokens_file=tokens_file, env=env)

        return HttpTarget(text, tokens_file=tokens_file, env=env, race_digest=race_digest)
    raise UnsupportedTarget(f"unsupported target {redact(text)!r}; use one of: {TARGET_HELP}")


__all__ = ["TARGET_HELP", "Reply", "Target", "TargetSession", "open_target"]
