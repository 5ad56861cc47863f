"""SqliteStore: the embedded default (a WAL file, busy timeout, connection per thread)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.domain import HarnessError, Intent, InvalidIntent, StoreError, UnsupportedTarget
from harness.domain.clock import parse_rfc3339, rfc3339
from harness.domain.redaction import redact_dsn
from harness.store.queries import migrations
from harness.store.sqlstore import CursorTx, IdFactory, SqlStore, Tx, dumps_json, random_ids

MIN_SQLITE = (3, 35, 0)  # RETURNING and INSERT … ON CONFLICT DO NOTHING


class SqliteStore(SqlStore):
    """The reference store on one SQLite file, safe for many threads and processes."""

    backend = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Any = None,
        ids: IdFactory = random_ids,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise StoreError(
                f"SQLite {sqlite3.sqlite_version} is too old; failover-harness needs "
                f"{'.'.join(map(str, MIN_SQLITE))} or newer (use Python 3.11+ from python.org)"
            )
        super().__init__(clock=clock, ids=ids)
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._closed = False
        self._idle = threading.Condition()  # close() waits until no thread is in a statement
        self._active = 0
        self._migrate()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreError("the store is closed")
            try:
                conn = sqlite3.connect(
                    self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None,
                    check_same_thread=False,
                )
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from None
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, counted as in use until the block ends: :meth:`close`
        never closes a connection another thread is executing on (that crashed the process:
        Ctrl-C during ``certify`` closed the store in a ``finally`` under a worker thread)."""
        with self._idle:
            if self._closed:
                raise StoreError("the store is closed")
            self._active += 1
        try:
            yield self.connection()
        finally:
            with self._idle:
                self._active -= 1
                if not self._active:
                    self._idle.notify_all()

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        with self._using() as conn:
            yield from self._transaction(conn, write)

    def _transaction(self, conn: sqlite3.Connection, write: bool) -> Iterator[Tx]:
        try:
            # IMMEDIATE takes the write lock up front, so two writers never deadlock upgrading;
            # a read-only transaction is DEFERRED and takes no write lock.
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise _wrap(exc) from None
        try:
            yield CursorTx(conn, self.queries)
        except sqlite3.Error as exc:
            _rollback(conn)
            raise _wrap(exc) from None
        except BaseException:
            _rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise _wrap(exc) from None

    @contextmanager
    def statements(self) -> Iterator[Tx]:
        """Single statements in autocommit on the store's own connections (a create is one
        INSERT, not BEGIN IMMEDIATE … COMMIT); a session someone else supplies (explore's gated
        one) keeps its transaction, as on PostgreSQL."""
        if type(self.connection()) is not sqlite3.Connection:
            with self.transaction() as tx:
                yield tx
            return
        with self._using() as conn:
            try:
                yield CursorTx(conn, self.queries)
            except sqlite3.Error as exc:
                raise _wrap(exc) from None

    @contextmanager
    def reads(self) -> Iterator[Tx]:
        """Autocommit: each read is atomic on its own and takes only a shared lock (never
        ``BEGIN IMMEDIATE``, the write lock), so reads do not queue behind writers (WAL)."""
        with self._using() as conn:
            try:
                yield CursorTx(conn, self.queries)
            except sqlite3.Error as exc:
                raise _wrap(exc) from None

    def _migrate(self) -> None:
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            current = row[0] or 0
            for version, statements in migrations("sqlite"):
                if version > current:
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise _wrap(exc) from None

    def schema_version(self) -> int:
        row = self.connection().execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0])

    def close(self, *, wait_s: float = 30.0) -> None:
        """Refuse new statements, interrupt the running ones and wait (at most ``wait_s``)
        for their threads to leave them, then close every connection."""
        with self._idle:
            self._closed = True
            with self._all_lock:
                for conn in self._all:
                    with suppress(sqlite3.Error):
                        conn.interrupt()
            if not self._idle.wait_for(lambda: self._active == 0, timeout=wait_s):
                return  # a thread is stuck in SQLite: leaking its connection beats a crash
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    def _json_in(self, value: Any) -> Any:
        return dumps_json(value)

    def _intent_in(self, intent: Intent) -> dict[str, Any]:
        # TEXT columns hold the canonical JSON already computed for the fingerprint.
        return dict(zip(("input", "params", "policy"), intent.canonical_parts, strict=True))

    def _json_out(self, value: Any) -> Any:
        return json.loads(value)

    def _time_in(self, value: datetime) -> Any:
        return rfc3339(value)

    def _time_out(self, value: Any) -> datetime:
        return parse_rfc3339(value)


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite ends some on its own (SQLITE_FULL,
    IOERR, BUSY, NOMEM, INTERRUPT), and a bare ROLLBACK would then raise and hide the cause."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _wrap(exc: sqlite3.Error) -> HarnessError:
    """A driver error as ours; the message names the condition, never the SQL. A value the
    database refuses (``DataError``: too big, out of range) is the request's fault: 422."""
    text = str(exc)
    if isinstance(exc, sqlite3.DataError):
        return InvalidIntent(f"a value in the request cannot be stored: {text}; "
                             "send smaller values")
    if "locked" in text or "busy" in text:
        return StoreError("the SQLite database is busy (another writer held it too long)")
    return StoreError(f"SQLite error: {type(exc).__name__}: {text}")


def sqlite_path_from_url(url: str) -> str:
    """``sqlite:///rel/path`` → ``rel/path``; ``sqlite:////abs/path`` → ``/abs/path``."""
    if not url.startswith("sqlite:///") or len(url) <= len("sqlite:///"):
        raise UnsupportedTarget(
            f"{redact_dsn(url)!r} is not a SQLite URL; write sqlite:///relative/file.db or "
            "sqlite:////absolute/file.db"
        )
    path = url[len("sqlite:///"):].split("?", 1)[0]
    if path == ":memory:":
        raise UnsupportedTarget(
            "sqlite:///:memory: cannot be shared between threads; use a file path"
        )
    return path
