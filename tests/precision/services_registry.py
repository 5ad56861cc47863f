"""Which services the precision suite runs, and how (see conftest.Spec).

Conformant services (written from API.md alone) must pass every shipped scenario and the
detection suite; middleware services (real idempotency middlewares from PyPI, jobs only) are
judged by profiles written from their own documentation; refusers must pass nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.precision.conftest import Spec

REFUSER_STATUSES = (401, 403, 404, 500)


def _empty_jobs_db(folder: Path) -> None:
    """A database with an empty jobs table: the refusers' side-effect counter (always 0)."""
    with sqlite3.connect(folder / "empty.db") as db:
        db.execute("CREATE TABLE IF NOT EXISTS jobs (id TEXT)")


CONFORMANT: dict[str, Spec] = {
    "stdlib-sqlite": Spec(
        module="stdlib_sqlite", args=lambda d: ["--db", str(d / "jobs.db")],
        profile="api-md-sql.profile.yaml", replicas=2,
        env=lambda d: {"PRECISION_JOBS_DB": f"sqlite:///{d / 'jobs.db'}"}),
}

REFUSERS: dict[str, Spec] = {
    f"refuses-{status}": Spec(
        module="refuser", args=lambda d, s=status: ["--status", str(s)],
        profile="refuser.profile.yaml", setup=_empty_jobs_db,
        env=lambda d: {"PRECISION_JOBS_DB": f"sqlite:///{d / 'empty.db'}"})
    for status in REFUSER_STATUSES
}

SPECS: dict[str, Spec] = {**CONFORMANT, **REFUSERS}
