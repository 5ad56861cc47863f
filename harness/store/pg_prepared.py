"""Sessions that prepare each statement at its first use and keep it for their whole life.

psycopg prepares a statement on its sixth execution in a session (the first five are parsed and
planned by the server each time), and forgets every prepared statement of the session at each
ROLLBACK (``DEALLOCATE ALL``), in case the rolled-back transaction changed the schema a
statement was planned on. The store's transactions never change the schema (migrations run
when it opens, before any of its statements), yet they roll back whenever an operation is
refused (``attempt_in_flight``, ``job_completed``, a lost compare-and-swap): explore's sessions
then parsed and planned their statements again and again — a quarter of the server's CPU per
``timeouts`` schedule. Imported with the ``postgres`` extra only (by :func:`driver`).

PostgreSQL keeps a session's prepared statements across ROLLBACK (they are not transactional),
so keeping psycopg's cache is exact. psycopg has no public switch for it: the cache
(``psycopg._preparing.PrepareManager``, ``Connection._prepared``) is private; if a psycopg
release lacks it, the sessions are psycopg's own (correct, only slower).
"""

from __future__ import annotations

from typing import Any

import psycopg

try:  # private to psycopg: without it the sessions forget at ROLLBACK, as psycopg's own do
    from psycopg._preparing import PrepareManager
except ImportError:  # pragma: no cover - a psycopg release without the private module
    PrepareManager = None  # type: ignore[assignment, misc]


class PreparingConnection(psycopg.Connection[Any]):
    """A psycopg session whose prepared statements survive ROLLBACK; open it with
    ``prepare_threshold=0`` to prepare each statement at its first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if PrepareManager is not None and type(self._prepared) is PrepareManager:
            self._prepared = _KeptStatements()


if PrepareManager is not None:

    class _KeptStatements(PrepareManager):
        """psycopg's prepared-statement cache, never cleared (see the module's docstring)."""

        def clear(self) -> bool:
            return False
