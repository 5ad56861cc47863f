"""PostgresStore: the reference store on PostgreSQL (psycopg 3 with a psycopg_pool pool)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from importlib import resources
from types import SimpleNamespace
from typing import Any

from harness.domain import (
    ClaimOutcome,
    EventResult,
    Intent,
    InvalidIntent,
    StoreError,
    payload_digest,
)
from harness.domain.errors import MissingExtra
from harness.domain.redaction import redact_about, register_dsn
from harness.store.queries import ATTEMPT_COLUMNS, _strip_comments, migrations
from harness.store.sqlstore import CursorTx, IdFactory, Row, SqlStore, Tx, random_ids

_TUPLES_OK = 2  # libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK)
_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
_MIGRATION_LOCK = 0x66_68_61_72  # "fhar": serialises concurrent migrators (replicas)


class PgTx(CursorTx):
    """A transaction on a psycopg connection: rows only when the statement returned some,
    read from the result's status (``cursor.description`` builds a Column per column: a
    fifth of a create's client time)."""

    def execute(self, name: str, params: Mapping[str, Any]) -> tuple[list[Row], int]:
        cursor = self.conn.execute(self.queries[name], params)
        if not hasattr(cursor, "pgresult"):  # a stand-in cursor (explore's held sessions)
            return self._rows(cursor), cursor.rowcount
        result = cursor.pgresult
        rows = cursor.fetchall() if result is not None and result.status == _TUPLES_OK else []
        return rows, cursor.rowcount


@cache
def driver() -> SimpleNamespace:
    """psycopg and its pool (the ``postgres`` extra), imported when the first PostgreSQL store
    opens: a command on SQLite does not pay their import (about 0.2 s of CPU per process)."""
    try:
        import psycopg  # optional extra: postgres
        from psycopg.rows import dict_row  # optional extra: postgres
        from psycopg.types.json import Json, Jsonb  # optional extra: postgres
        from psycopg_pool import ConnectionPool  # optional extra: postgres

        from harness.store.pg_prepared import PreparingConnection  # optional extra: postgres
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise MissingExtra("postgres", module="psycopg",
                           purpose="a postgresql:// store") from None
    return SimpleNamespace(psycopg=psycopg, dict_row=dict_row, Json=Json, Jsonb=Jsonb,
                           ConnectionPool=ConnectionPool, PreparingConnection=PreparingConnection)


def to_pyformat(sql: str) -> str:
    """``:name`` placeholders → psycopg's ``%(name)s``."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


class PostgresStore(SqlStore):
    """The reference store on PostgreSQL; READ COMMITTED, the constraints do the deciding."""

    backend = "postgres"
    for_update = "FOR UPDATE"

    def __init__(
        self,
        dsn: str,
        *,
        clock: Any = None,
        ids: IdFactory = random_ids,
        pool_size: int = 16,
        keep_prepared: bool = False,
    ) -> None:
        """``keep_prepared``: sessions prepare each statement at its first use and keep it
        across ROLLBACK (:mod:`harness.store.pg_prepared`; explore's store, whose operations
        are refused, and roll back, in most schedules)."""
        pg = self.pg = driver()
        super().__init__(clock=clock, ids=ids)
        queries = {**self.queries, "claim": _claim_sql()}
        self.queries = {k: to_pyformat(v) for k, v in queries.items()}
        self.dsn = dsn
        self.keep_prepared = keep_prepared
        register_dsn(dsn)  # the pool's own log lines may quote it: the log filter removes it
        try:
            self.pool = pg.ConnectionPool(
                dsn, min_size=1, max_size=pool_size, open=True, timeout=30,
                # autocommit: single statements are one round trip; transaction() opens
                # BEGIN … COMMIT explicitly where several statements must be atomic.
                kwargs={"row_factory": pg.dict_row, "autocommit": True, **self.preparing()},
                connection_class=self.session_class(),
            )
            self.pool.wait(timeout=10)
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {_safe(exc, dsn)}") from None
        self._migrate()

    def session_class(self) -> Any:
        """The psycopg connection class of this store's sessions."""
        return self.pg.PreparingConnection if self.keep_prepared else self.pg.psycopg.Connection

    def preparing(self) -> dict[str, Any]:
        """The connection options that say when a session prepares a statement."""
        return {"prepare_threshold": 0} if self.keep_prepared else {}

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        try:
            with self.pool.connection() as conn, conn.transaction():
                yield PgTx(conn, self.queries)
        except self.pg.psycopg.Error as exc:
            raise self._wrap(exc) from None

    @contextmanager
    def statements(self) -> Iterator[Tx]:
        try:
            with self.pool.connection() as conn:
                if conn.autocommit:
                    yield PgTx(conn, self.queries)
                else:  # a session someone else configured (explore's --commit-steps): keep
                    # it transactional, so that its COMMIT can be a step of its own
                    with conn.transaction():
                        yield PgTx(conn, self.queries)
        except self.pg.psycopg.Error as exc:
            raise self._wrap(exc) from None

    def _wrap(self, exc: Exception) -> Exception:
        """A driver error as ours: the caller's input, or the database failing."""
        if isinstance(exc, self.pg.psycopg.DataError) and (
            exc.sqlstate == "22P05" or "NUL (0x00)" in str(exc)
        ):  # the input, not the database: PostgreSQL text and jsonb cannot hold U+0000
            return InvalidIntent(
                "a string contains a NUL character (U+0000), which PostgreSQL cannot "
                "store; remove it"
            )
        # SQLSTATE class 22: the value, not the server
        if isinstance(exc, self.pg.psycopg.DataError):
            first = _safe(exc, self.dsn).splitlines()[0] if str(exc) else exc.sqlstate
            return InvalidIntent(f"a value in the request cannot be stored: {first}; "
                                 "send finite numbers and plain text")
        return StoreError(f"PostgreSQL error: {_safe(exc, self.dsn)}")

    @contextmanager
    def raw_connection(self) -> Iterator[Any]:
        """A pooled connection for callers that need the session itself (explore, tests)."""
        with self.pool.connection() as conn:
            yield conn

    def _migrate(self) -> None:
        with self.transaction() as tx:
            conn = tx.conn  # type: ignore[attr-defined]
            # prepare=False: run once per store, never worth preparing
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,), prepare=False)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
                         prepare=False)
            current = conn.execute("SELECT max(version) AS v FROM schema_version",
                                   prepare=False).fetchone()["v"]
            for version, statements in migrations("postgres"):
                if version > (current or 0):
                    for statement in statements:
                        conn.execute(statement, prepare=False)
                    conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,),
                                 prepare=False)

    def schema_version(self) -> int:
        with self.transaction(write=False) as tx:
            row = tx.conn.execute("SELECT max(version) AS v FROM schema_version").fetchone()  # type: ignore[attr-defined]
            return int(row["v"])

    def close(self) -> None:
        self.pool.close()

    def succeed(self, owner_id: str, attempt_id: str, result: Any) -> EventResult:
        """The claim in one statement (``sql/postgres/claim.sql``) when the attempt is open;
        otherwise (or for stores that change the claim: mutants override ``_claim``), statement
        by statement as in :class:`SqlStore`.

        On the pool's sessions (autocommit) the statement is one round trip; on explore's gated
        sessions (autocommit too, unless ``--commit-steps``) it is one step, so explore searches
        the claim that production runs.
        """
        if type(self)._claim is SqlStore._claim:
            digest = payload_digest(result)
            with self.statements() as tx:  # the pool's sessions are autocommit: one round trip
                row = tx.one(
                    "claim", attempt_id=attempt_id, owner_id=owner_id,
                    result=self._json_in(result), result_sha256=digest,
                    race_id=self.ids("race"), now=self._now(),
                )
            if row is not None:
                return EventResult(self._attempt(row), ClaimOutcome(row["outcome"]))
        return super().succeed(owner_id, attempt_id, result)

    def _json_in(self, value: Any) -> Any:
        return self.pg.Jsonb(value)

    def _intent_in(self, intent: Intent) -> dict[str, Any]:
        # json columns hold the canonical JSON already computed for the fingerprint, as on SQLite.
        return {name: self.pg.Json(text, dumps=_as_is)
                for name, text in zip(("input", "params", "policy"), intent.canonical_parts,
                                      strict=True)}

    def _json_out(self, value: Any) -> Any:
        return value

    def _time_in(self, value: datetime) -> Any:
        return value

    def _time_out(self, value: Any) -> datetime:
        return value


def _claim_sql() -> str:
    qualified = ", ".join(f"attempts.{c.strip()}" for c in ATTEMPT_COLUMNS.split(","))
    text = resources.files("harness.store").joinpath("sql/postgres/claim.sql").read_text("utf-8")
    return _strip_comments(text).format(qualified_attempt_columns=qualified)


def _as_is(text: str) -> str:
    """A ``dumps`` for JSON that is already text."""
    return text


def _safe(exc: BaseException, dsn: str) -> str:
    """The driver's first line with the DSN's password(s) removed (URL or key=value form)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return redact_about(text, dsn)
