"""Holds: every SQL statement a worker's store sends first waits for the controller's permission.

One :class:`Worker` per logical client: a thread of its own with a database session of its own,
reused from schedule to schedule. The store's connection is wrapped (:class:`HeldSqlite`,
:class:`HeldPg`) so that each ``execute`` parks the worker until the controller grants it that
step. Between two statements the worker runs freely (Python only, no database). All state lives
under one lock: each worker waits on a condition of its own and the controller on another, so
a grant wakes exactly one thread and a worker's news wakes only the controller. Nothing sleeps.

What a step is: one statement the store wrote. Transaction control travels with the statements
next to it: SQLite's ``BEGIN`` is sent with the transaction's first statement (so a writer takes
the lock in a step, and ``SQLITE_BUSY`` — immediate, with ``busy_timeout = 0`` — parks the worker
to retry as a new step); ``COMMIT``/``ROLLBACK`` run right after the last one, in the same step
— unless ``commit_steps`` is on: then a write transaction's COMMIT is a step of its own, so other
clients can run (and wait on its locks) while it is open after its last statement.

The holding proxy's side is here too: a service's storage step (:class:`HeldStep`) waits at the
proxy until the controller's :class:`Hold` grants it (:class:`OpenHold` lets every step pass).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.explore.proxy import Link  # the proxy imports this module

RUNNING, PARKED, IDLE = "running", "parked", "idle"


class ExploreAborted(BaseException):
    """The controller stopped the schedule: unwind the operation. A BaseException, so no store
    (and no ``except Exception`` in a session) mistakes it for a database error."""


class Worker:
    """One logical client: a thread, a database session, and its place on the board."""

    def __init__(self, index: int, lock: threading.Lock, controller: threading.Condition) -> None:
        self.index = index
        self.controller = controller  # the controller waits on it (over the same lock)
        self.cv = threading.Condition(lock)  # this worker waits on it
        self.client = ""
        self.status = IDLE
        self.label: str | None = None  # the statement waiting for its turn
        self.doing = ""  # the operation it is in, for the schedule
        self.granted = False
        self.abort = False
        self.stopping = False
        self.busy = False  # SQLite: the last try of the parked statement got SQLITE_BUSY
        self.holds_write = False  # SQLite: a write transaction is open on this session
        self.queue: deque[Callable[[], None]] = deque()
        self.events: list[Any] = []  # Invoked / Completed, written by the controller
        self.conn: Any = None  # the held session, opened on first use
        self.pid: int | None = None  # PostgreSQL backend pid
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name=f"explore-{index}", daemon=True)

    # -- the worker's thread --------------------------------------------------------------------
    def _main(self) -> None:
        _LOCAL.worker = self
        cv = self.cv
        while True:
            with cv:
                self.status = IDLE
                if not self.queue:  # settled: news for the controller (else it moves on)
                    self.controller.notify_all()
                    cv.wait_for(lambda: bool(self.queue) or self.stopping)
                if not self.queue:
                    return
                job = self.queue.popleft()
                self.status = RUNNING
            try:
                job()
            except ExploreAborted:
                pass
            except BaseException as exc:  # reported by the controller, never swallowed
                self.error = exc

    def wait_turn(self, label: str) -> None:
        """Park until the controller grants the step ``label`` (or aborts the schedule)."""
        cv = self.cv
        with cv:
            self.status, self.label = PARKED, label
            self.controller.notify_all()
            cv.wait_for(lambda: self.granted or self.abort)
            self.status, self.label, self.granted = RUNNING, None, False
            if self.abort:
                raise ExploreAborted

    # -- what the controller reads ----------------------------------------------------------
    def unsettled(self) -> bool:
        """Still moving: running, granted but not yet woken, or woken by new work."""
        return (self.status == RUNNING or (self.status == PARKED and (self.granted or self.abort))
                or (self.status == IDLE and bool(self.queue)))


_LOCAL = threading.local()


def current_worker() -> Worker | None:
    """The worker running on this thread, if any."""
    return getattr(_LOCAL, "worker", None)


_WRITE = re.compile(r"^\s*(insert\s+into|update|delete\s+from)\s+(\w+)", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+(\w+)", re.IGNORECASE)


def statement_name(sql: str, names: Mapping[str, str]) -> str:
    """The store's name for ``sql`` (``insert_job``), else verb and table (``insert jobs``)."""
    known = names.get(sql)
    if known is not None:
        return known
    match = _WRITE.match(sql)
    if match:
        return f"{match.group(1).split()[0].lower()} {match.group(2)}"
    found = _FROM.search(sql)
    words = sql.split()
    verb = words[0].lower() if words else "statement"
    return f"{verb} {found.group(1)}" if found else verb


class _NoRows:
    """The cursor of a statement that was deferred (BEGIN) or had nothing to end."""

    description = None
    rowcount = -1

    def fetchall(self) -> list[Any]:
        return []

    def fetchone(self) -> None:
        return None


_NO_ROWS = _NoRows()


def _writes(sql: str) -> bool:
    """A statement that writes or locks rows (its transaction's COMMIT can matter to others)."""
    head = sql.lstrip()[:6].upper()
    return head != "SELECT" or "FOR UPDATE" in sql.upper()


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class HeldSqlite:
    """A worker's sqlite3 connection: each statement waits for its turn; BUSY parks and retries."""

    def __init__(self, real: sqlite3.Connection, worker: Worker, names: Mapping[str, str],
                 *, commit_steps: bool = False) -> None:
        self._real = real
        self._worker = worker
        self._names = names
        self._begin: str | None = None
        self.commit_steps = commit_steps

    @property
    def in_transaction(self) -> bool:
        return self._real.in_transaction or self._begin is not None

    def execute(self, sql: str, params: Any = ()) -> Any:
        head = sql.lstrip()[:8].upper()
        if head.startswith("BEGIN"):
            self._begin = sql  # sent with the first statement, inside its step
            return _NO_ROWS
        if head.startswith(("COMMIT", "ROLLBACK", "END")):
            if self._begin is not None:  # the transaction never ran a statement
                self._begin = None
                return _NO_ROWS
            if self.commit_steps and head.startswith("COMMIT") and self._worker.holds_write:
                try:
                    self._worker.wait_turn(f"{self._worker.client}: commit")
                except ExploreAborted:
                    self._real.execute("ROLLBACK")
                    self._worker.holds_write = False
                    raise
            try:
                return self._real.execute(sql)
            finally:
                self._worker.holds_write = False
        worker = self._worker
        label = f"{worker.client}: {statement_name(sql, self._names)}"
        worker.wait_turn(label)
        while True:
            try:
                if self._begin is not None:
                    self._real.execute(self._begin)
                    worker.holds_write = "IMMEDIATE" in self._begin.upper() or \
                        "EXCLUSIVE" in self._begin.upper()
                    self._begin = None
                cursor = self._real.execute(sql, params)
                worker.busy = False
                return cursor
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                worker.busy = True  # the controller holds this retry until the writer is done
                worker.wait_turn(label)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class HeldPg:
    """A worker's psycopg connection: each statement waits for its turn. A statement that then
    waits on a lock inside PostgreSQL is seen by the controller through ``pg_blocking_pids``."""

    def __init__(self, real: Any, worker: Worker, names: Mapping[str, str],
                 *, commit_steps: bool = False) -> None:
        self._real = real
        self._worker = worker
        self._names = names
        self._wrote = False
        self._depth = 0  # transaction() blocks open
        self._loose = False  # a statement ran outside them: an implicit transaction may be open
        self._autocommit = bool(getattr(real, "autocommit", False))  # a statement is its own
        self.commit_steps = commit_steps

    @property
    def may_hold_locks(self) -> bool:
        """Could this session hold a lock another statement waits on? Set before its BEGIN
        and cleared only once COMMIT or ROLLBACK returned; a statement outside
        :meth:`transaction` on a session that is not in autocommit (never the store's own)
        makes it stay set; in autocommit such a statement holds its locks only while it runs."""
        return self._depth > 0 or self._loose

    def execute(self, sql: Any, params: Any = None, **options: Any) -> Any:
        worker = self._worker
        text = str(sql)
        worker.wait_turn(f"{worker.client}: {statement_name(text, self._names)}")
        self._wrote = self._wrote or _writes(text)
        self._loose = self._loose or (self._depth == 0 and not self._autocommit)
        return self._real.execute(sql, params, **options)

    @contextmanager
    def transaction(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        self._wrote = False
        self._depth += 1
        try:
            with self._real.transaction(*args, **kwargs) as tx:
                yield tx
                if self.commit_steps and self._wrote:
                    self._worker.wait_turn(f"{self._worker.client}: commit")
        finally:
            self._depth -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


# -- the holding proxy's side: a service's storage steps ------------------------------------
@dataclass(eq=False)
class HeldStep:
    """One step of one connection, held until granted."""

    link: Link
    shape: str
    raw: bytes
    answers: int  # replies (Redis) or ReadyForQuery messages (PostgreSQL) it gets
    seq: int
    client: str | None = None  # set by the controller: whose request sent it
    label: str = ""
    guessed: bool = False  # attributed while more than one request was moving
    granted: bool = False
    offered: bool = False  # handed to the hold
    done: bool = False  # its answer came back
    left: int = 0  # answers still to come


class Hold(Protocol):
    """The controller's side of the proxy. None of these may block: they run on the link's
    thread, which also carries the server's answers."""

    def submit(self, step: HeldStep) -> None:
        """``step`` wants to go to the server: set ``step.granted`` now to let it pass, or
        later (from any thread) followed by ``step.link.wake()``."""

    def answered(self, step: HeldStep) -> None:
        """``step``'s answer is complete."""

    def gone(self, link: Link) -> None:
        """``link`` closed: forget its held steps."""


class OpenHold:
    """Every step passes at once (the proxy's overhead alone, or between schedules)."""

    def submit(self, step: HeldStep) -> None:
        step.granted = True

    def answered(self, step: HeldStep) -> None:
        return None

    def gone(self, link: Link) -> None:
        return None
