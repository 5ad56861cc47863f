"""Load the named SQL blocks (``-- name --``) and the migrations shipped as package data."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_BLOCK = re.compile(r"^-- ([a-z_]+) --$", re.MULTILINE)

JOB_COLUMNS = (
    "id, owner_id, idempotency_key, fingerprint, contract, input, params, policy, status, "
    "version, completed_by, result, created_at, updated_at"
)
ATTEMPT_COLUMNS = (
    "id, job_id, provider, state, read_version, open_slot, outcome, error, result_sha256, "
    "cancel_reason, "
    "created_at, updated_at"
)
RACE_COLUMNS = "attempt_id, job_id, at, payload_sha256, winner_attempt_id, reason"


def _strip_comments(sql: str) -> str:
    kept = (line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return "\n".join(kept).strip()


@cache
def load_queries(for_update: str) -> dict[str, str]:
    """Every named query of ``queries.sql``, with the column lists and row lock filled in."""
    text = resources.files("harness.store").joinpath("sql/queries.sql").read_text("utf-8")
    parts = _BLOCK.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        queries[name] = _strip_comments(body).format(
            job_columns=JOB_COLUMNS,
            attempt_columns=ATTEMPT_COLUMNS,
            race_columns=RACE_COLUMNS,
            for_update=for_update,
        )
    return queries


def migrations(dialect: str) -> list[tuple[int, list[str]]]:
    """``[(version, statements)]`` for ``dialect``, oldest first."""
    folder = resources.files("harness.store").joinpath(f"sql/{dialect}")
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_\w+\.sql", entry.name)
        if match:
            sql = _strip_comments(entry.read_text("utf-8"))
            statements = [s.strip() for s in sql.split(";") if s.strip()]
            found.append((int(match.group(1)), statements))
    return sorted(found)
