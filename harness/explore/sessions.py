"""Give each worker its own held database session on a store, and see who waits on whom.

``attach(store)`` reroutes the store's connection source without touching its code: on a worker
thread, :class:`~harness.store.sqlite.SqliteStore` ``connection()`` and
:class:`~harness.store.postgres.PostgresStore` ``pool.connection()`` answer with that worker's
held session; any other thread (the controller running setup and epilogue) gets the store's own.
So the reference store, every mutant and any subclass of them run unchanged, one statement per
step.

Who waits: on SQLite nobody ever waits (``busy_timeout = 0``: SQLITE_BUSY is immediate; the
writer holding the lock is known from the sessions). On PostgreSQL a statement may wait on a lock
inside the server; :meth:`PgSessions.probe` asks ``pg_blocking_pids`` on a control connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from harness.domain import StoreError, UnsupportedTarget
from harness.explore.hold import HeldPg, HeldSqlite, Worker, current_worker
from harness.store.postgres import PostgresStore, _safe
from harness.store.sqlite import SqliteStore
from harness.store.sqlstore import SqlStore


class Sessions:
    """The workers' sessions on one store."""

    kind = "sql"
    commit_steps = False  # a write transaction's COMMIT is a step of its own

    def open(self, worker: Worker) -> None:
        """Open ``worker``'s session now (on the controller's thread), so a step never connects."""

    def probe(self, running: Sequence[Worker]) -> dict[Worker, set[int]]:
        """For each running worker, the backend pids it waits for (empty: it is not waiting)."""
        return {w: set() for w in running}

    def close(self) -> None:
        """Close the workers' sessions."""


class SqliteSessions(Sessions):
    """Workers on a :class:`SqliteStore`: each thread's own connection, ``busy_timeout = 0``."""

    kind = "sqlite"

    def __init__(self, store: Any) -> None:
        self.store = store
        self.names = {sql: name for name, sql in store.queries.items()}
        self.own = store.connection  # the store's per-thread connection, bound method

        def routed() -> Any:
            worker = current_worker()
            if worker is None:
                return self.own()
            if worker.conn is None:
                real = self.own()  # this worker thread's own connection
                real.execute("PRAGMA busy_timeout = 0")
                worker.conn = HeldSqlite(real, worker, self.names,
                                          commit_steps=self.commit_steps)
            return worker.conn

        store.connection = routed

    def close(self) -> None:
        self.store.__dict__.pop("connection", None)  # the store's own method again


class _RoutedPool:
    """Stands in for the store's pool: a worker gets its own session, anyone else the pool's."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        worker = current_worker()
        if worker is None:
            with self.pool.connection(timeout=timeout) as conn:
                yield conn
        else:
            yield worker.conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


class PgSessions(Sessions):
    """Workers on a :class:`PostgresStore`: one dedicated connection each, and a control
    connection that asks ``pg_blocking_pids`` who waits."""

    kind = "postgres"

    def __init__(self, store: Any) -> None:
        import psycopg  # optional extra: postgres
        from psycopg.rows import dict_row  # optional extra: postgres

        self.psycopg, self.dict_row = psycopg, dict_row
        self.store = store
        self.names = {sql: name for name, sql in store.queries.items()}
        self.opened: list[Any] = []
        self.control = self._connect(autocommit=True)
        store.pool = _RoutedPool(store.pool)

    def _connect(self, **options: Any) -> Any:
        try:
            conn = self.store.session_class().connect(self.store.dsn, **options)
        except self.psycopg.Error as exc:
            raise StoreError(f"explore cannot open a session: {_safe(exc, self.store.dsn)}") \
                from None
        self.opened.append(conn)
        return conn

    def open(self, worker: Worker) -> None:
        if worker.conn is None:
            # Autocommit, as the store's pool: a single statement is one round trip (not
            # BEGIN … COMMIT), and its COMMIT runs in its step either way. With commit_steps a
            # write's COMMIT is a step of its own: every statement keeps its transaction.
            real = self._connect(row_factory=self.dict_row, autocommit=not self.commit_steps,
                                 **self.store.preparing())
            worker.pid = real.info.backend_pid
            worker.conn = HeldPg(real, worker, self.names, commit_steps=self.commit_steps)

    def probe(self, running: Sequence[Worker]) -> dict[Worker, set[int]]:
        pids = [w.pid for w in running]
        rows = self.control.execute(
            "SELECT pid, pg_blocking_pids(pid) FROM unnest(%s::int[]) AS pid", (pids,)
        ).fetchall()
        waits = {int(pid): {int(p) for p in blockers or ()} for pid, blockers in rows}
        return {w: waits.get(w.pid or -1, set()) for w in running}

    def close(self) -> None:
        for conn in self.opened:
            conn.close()
        self.opened.clear()
        if isinstance(self.store.pool, _RoutedPool):
            self.store.pool = self.store.pool.pool


def attach(store: SqlStore) -> Sessions:
    """Route ``store``'s connections through held per-worker sessions."""

    if isinstance(store, SqliteStore):
        return SqliteSessions(store)
    if isinstance(store, PostgresStore):
        return PgSessions(store)
    raise UnsupportedTarget(
        f"explore interleaves the SQL statements of stores built on SqliteStore or "
        f"PostgresStore; {type(store).__name__} is neither (use --stress for other targets)"
    )
