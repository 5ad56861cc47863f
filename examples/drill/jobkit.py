"""What the example job services share: their SQLite job store, their HTTP API, their options.

Not part of failover-harness: these services stand for *your* LLM job service. Each one is a
jobs API in front of a worker that sends the job's text as the prompt to a primary provider (the
OpenAI chat-completions wire at ``OPENAI_BASE_URL``) and a fallback (the Anthropic messages wire
at ``ANTHROPIC_BASE_URL``):

- ``POST /jobs`` with ``{"text": "<prompt>"}`` (that one string field, nothing else: else 422
  ``invalid_body``), the header ``Idempotency-Key`` (400 without) and the owner in ``X-Owner``
  (401 without; a name, not a secret). 201 a new job; 200 with ``Idempotent-Replayed: true``
  for the same owner, key and body; 409 ``idempotency_key_reused`` for another body. Keys are
  per owner.
- ``GET /jobs/{id}`` (``X-Owner``; another owner's job is 404): ``{"id", "status": "queued" |
  "running" | "succeeded" | "failed", "result": {"text"} | null, "provider"}``;
  ``GET /jobs/{id}/attempts`` and ``GET /jobs/{id}/races`` (late results dropped);
  ``GET /healthz``.

The services differ in how the worker times out, falls back and writes the result. ``--defect``
(every service has it) breaks the API instead, one rule each, for the scenarios of
``check --target`` to find:

- ``check-then-insert``: the key is looked up, then the job inserted, with no unique constraint
  and ``--check-gap`` seconds of the request's other work in between (a quota look-up on
  another server): a true double click makes two jobs.
- ``owner-blind``: keys are global and a job is shown to anyone who asks (an owner leak).
- ``replay-other-body``: another body under a used key gets the first job (200), not 409.
- ``refuse-creates``: every create is answered 422 (a body the service does not take).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import hashlib
import json
import os
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

DEFECTS = ("none", "check-then-insert", "owner-blind", "replay-other-body", "refuse-creates")


def missing_extra(extra: str, exc: ImportError) -> NoReturn:
    """An example started without its extra: say which to install, exit 2, no traceback."""
    print(f"error: {os.path.basename(sys.argv[0])} needs the Python package "
          f"{exc.name or str(exc)!r}, which is not installed\n"
          f"  fix: pip install 'failover-harness[{extra}]'", file=sys.stderr)
    raise SystemExit(2)


SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, key_scope TEXT NOT NULL,
  idempotency_key TEXT NOT NULL, fingerprint TEXT NOT NULL, text TEXT NOT NULL,
  status TEXT NOT NULL, version INTEGER NOT NULL, completed_by TEXT, provider TEXT,
  result TEXT, error TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL{unique});
CREATE TABLE IF NOT EXISTS attempts (
  id TEXT PRIMARY KEY, job_id TEXT NOT NULL, provider TEXT NOT NULL, state TEXT NOT NULL,
  read_version INTEGER NOT NULL, error TEXT, started_at REAL NOT NULL, ended_at REAL);
CREATE TABLE IF NOT EXISTS races (
  attempt_id TEXT NOT NULL, job_id TEXT NOT NULL, at REAL NOT NULL,
  payload_sha256 TEXT NOT NULL, winner_attempt_id TEXT, reason TEXT NOT NULL);
"""
UNIQUE = ",\n  UNIQUE (key_scope, idempotency_key)"
OPEN_STATES = ("starting", "running", "unknown")


class KeyReused(Exception):
    """The key is the owner's already, for another body."""


@dataclass(frozen=True)
class Attempt:
    id: str
    job_id: str
    provider: str
    read_version: int


class _OneWriter(sqlite3.Connection):
    """A connection whose writes take the store's lock: one writer of this process at a time,
    the others blocked on the lock until it is free. SQLite's own busy handler sleeps and tries
    again instead, and on a loaded machine a worker's status write once waited about 7 s while
    others kept taking the lock (its job's fallback started 8 s late). A transaction holds the
    lock from BEGIN to COMMIT or ROLLBACK; reads never wait for it."""

    writes: threading.RLock
    within = False  # a transaction of this connection (its thread's) holds the lock

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        word = sql.lstrip()[:8].upper()
        if word.startswith("BEGIN"):
            self.writes.acquire()
            try:
                cursor = super().execute(sql, parameters)
            except BaseException:
                self.writes.release()
                raise
            self.within = True
            return cursor
        if word.startswith(("COMMIT", "ROLLBACK")):
            try:
                return super().execute(sql, parameters)
            finally:
                if self.within:
                    self.within = False
                    self.writes.release()
        if word.startswith(("INSERT", "UPDATE", "DELETE")):
            with self.writes:
                return super().execute(sql, parameters)
        return super().execute(sql, parameters)


class Store:
    """Jobs, attempts and races in one SQLite file (WAL; a connection per thread).
    ``defect`` (one of :data:`DEFECTS`) is the one API rule this store breaks, if any."""

    def __init__(self, path: str, defect: str = "none", check_gap: float = 0.25) -> None:
        self.path, self.defect, self.check_gap = path, defect, check_gap
        self._local = threading.local()
        self._writes = threading.RLock()
        unique = "" if defect == "check-then-insert" else UNIQUE
        self._db().executescript(SCHEMA.format(unique=unique))

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None,
                                 factory=_OneWriter)
            db.writes = self._writes
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def create_job(self, owner: str, key: str, text: str) -> tuple[dict[str, Any], bool]:
        """(the job, whether this call created it); :class:`KeyReused` for another body."""
        scope = "" if self.defect == "owner-blind" else owner  # THE BUG of owner-blind
        fingerprint = hashlib.sha256(text.encode()).hexdigest()
        if self.defect == "check-then-insert":
            job_id = self._check_then_insert(owner, scope, key, fingerprint, text)
        else:  # one insert-or-conflict statement under UNIQUE (key_scope, key)
            job_id = self._insert(owner, scope, key, fingerprint, text,
                                  " ON CONFLICT (key_scope, idempotency_key) DO NOTHING")
        if job_id is not None:
            return dict(self._db().execute("SELECT * FROM jobs WHERE id = ?",
                                           (job_id,)).fetchone()), True
        row = self._db().execute("SELECT * FROM jobs WHERE key_scope = ? AND"
                                 " idempotency_key = ?", (scope, key)).fetchone()
        if row["fingerprint"] != fingerprint and self.defect != "replay-other-body":
            raise KeyReused(key)  # (replay-other-body: THE BUG, the first job is answered)
        return dict(row), False

    def _check_then_insert(self, owner: str, scope: str, key: str, fingerprint: str,
                           text: str) -> str | None:
        """THE BUG of check-then-insert: a look-up, other work, then an insert, no constraint."""
        found = self._db().execute("SELECT 1 FROM jobs WHERE key_scope = ? AND"
                                   " idempotency_key = ?", (scope, key)).fetchone()
        if found is not None:
            return None
        time.sleep(self.check_gap)  # the request's other work (a quota look-up elsewhere)
        return self._insert(owner, scope, key, fingerprint, text, "")

    def _insert(self, owner: str, scope: str, key: str, fingerprint: str, text: str,
                on_conflict: str) -> str | None:
        """The new job's id, or None if the key was taken (``on_conflict``)."""
        now, job_id = time.time(), uuid.uuid4().hex
        inserted = self._db().execute(
            "INSERT INTO jobs (id, owner, key_scope, idempotency_key, fingerprint, text, status,"
            " version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'queued', 1, ?, ?)"
            + on_conflict, (job_id, owner, scope, key, fingerprint, text, now,
                            now)).rowcount == 1
        return job_id if inserted else None

    def job(self, job_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """The job (None if there is none, or it is another owner's)."""
        row = self._db().execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return None
        if owner is not None and row["owner"] != owner and self.defect != "owner-blind":
            return None
        return dict(row)

    def start_attempt(self, job_id: str, provider: str) -> Attempt:
        attempt = Attempt(uuid.uuid4().hex, job_id, provider, self._version(job_id))
        db = self._db()
        db.execute("INSERT INTO attempts (id, job_id, provider, state, read_version, started_at)"
                   " VALUES (?, ?, ?, 'running', ?, ?)",
                   (attempt.id, job_id, provider, attempt.read_version, time.time()))
        db.execute("UPDATE jobs SET status = 'running' WHERE id = ? AND status = 'queued'",
                   (job_id,))
        return attempt

    def start_attempt_if_open(self, job_id: str, provider: str) -> Attempt | None:
        """A new attempt only while the job has no result (a completed job refuses new
        attempts): the check and the insert in one transaction, so a result committed in
        between cannot be missed. None when the job is complete."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            if self.is_complete(job_id):
                db.execute("ROLLBACK")
                return None
            attempt = self.start_attempt(job_id, provider)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return attempt

    def end_attempt(self, attempt: Attempt, state: str, error: str = "") -> None:
        """``unknown`` is open (a timeout); ``succeeded``/``failed`` end the attempt."""
        ended = None if state in OPEN_STATES else time.time()
        self._db().execute("UPDATE attempts SET state = ?, error = ?, ended_at = ? WHERE id = ?",
                           (state, error or None, ended, attempt.id))

    def claim(self, attempt: Attempt, text: str) -> bool:
        """The compare-and-swap: True if this attempt's answer became the job's result; else
        the answer is dropped and the lost claim recorded as a race, in the same transaction."""
        db, now = self._db(), time.time()
        db.execute("BEGIN IMMEDIATE")
        try:
            won = db.execute(
                "UPDATE jobs SET result = ?, provider = ?, completed_by = ?, status = 'succeeded',"
                " error = NULL, version = version + 1, updated_at = ? WHERE id = ? AND"
                " version = ? AND completed_by IS NULL",
                (text, attempt.provider, attempt.id, now, attempt.job_id,
                 attempt.read_version)).rowcount == 1
            if not won:
                digest = hashlib.sha256(text.encode()).hexdigest()
                db.execute(
                    "INSERT INTO races SELECT ?, id, ?, ?, completed_by, 'the job was completed"
                    " by another attempt' FROM jobs WHERE id = ?",
                    (attempt.id, now, digest, attempt.job_id))
            db.execute("UPDATE attempts SET state = 'succeeded', ended_at = ? WHERE id = ?",
                       (now, attempt.id))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return won

    def write_result(self, attempt: Attempt, text: str) -> None:
        """A plain write, no compare-and-swap (what the flawed twins do)."""
        self._db().execute(
            "UPDATE jobs SET result = ?, provider = ?, completed_by = ?, status = 'succeeded',"
            " error = NULL, version = version + 1, updated_at = ? WHERE id = ?",
            (text, attempt.provider, attempt.id, time.time(), attempt.job_id))
        self.end_attempt(attempt, "succeeded")

    def set_status(self, job_id: str, status: str, error: str = "") -> None:
        self._db().execute(
            "UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE id = ?"
            " AND completed_by IS NULL", (status, error or None, time.time(), job_id))

    def is_complete(self, job_id: str) -> bool:
        row = self._db().execute("SELECT completed_by FROM jobs WHERE id = ?",
                                 (job_id,)).fetchone()
        return row is not None and row[0] is not None

    def attempts(self, job_id: str) -> list[dict[str, Any]]:
        rows = self._db().execute("SELECT * FROM attempts WHERE job_id = ? ORDER BY started_at",
                                  (job_id,))
        return [dict(r) for r in rows]

    def races(self, job_id: str) -> list[dict[str, Any]]:
        rows = self._db().execute("SELECT * FROM races WHERE job_id = ? ORDER BY at", (job_id,))
        return [dict(r) for r in rows]

    def _version(self, job_id: str) -> int:
        return int(self._db().execute("SELECT version FROM jobs WHERE id = ?",
                                      (job_id,)).fetchone()[0])


def shown(job: dict[str, Any]) -> dict[str, Any]:
    """A job as ``GET /jobs/{id}`` shows it."""
    result = None if job["result"] is None else {"text": job["result"]}
    return {"id": job["id"], "status": job["status"], "result": result,
            "provider": job["provider"]}


# -- the API, independent of the HTTP stack ----------------------------------------------------
Reply = tuple[int, dict[str, str], Any]


def problem(status: int, error: str, detail: str) -> Reply:
    return status, {}, {"error": error, "detail": detail}


def create(store: Store, owner: str | None, key: str | None, body: Any,
           start_worker: Callable[[dict[str, Any]], None]) -> Reply:
    """``POST /jobs``: 201 and a new worker, 200 for a replay, 400/401/409/422 otherwise."""
    if not owner:
        return problem(401, "owner_missing", "send the owner in X-Owner")
    if not key:
        return problem(400, "idempotency_key_missing", "send Idempotency-Key")
    if len(key) > 255 or not key.isprintable() or " " in key:
        return problem(400, "idempotency_key_invalid", "1-255 printable ASCII, no spaces")
    if store.defect == "refuse-creates":  # THE BUG of refuse-creates
        return problem(422, "invalid_body", "this service takes no body it is sent")
    if not isinstance(body, dict) or set(body) != {"text"} or not isinstance(body["text"], str):
        return problem(422, "invalid_body", 'the body is {"text": "<prompt>"}, nothing else')
    try:
        job, created = store.create_job(owner, key, body["text"])
    except KeyReused:
        return 409, {}, {"error": "idempotency_key_reused"}
    if created:
        start_worker(job)
        return 201, {}, shown(job)
    return 200, {"Idempotent-Replayed": "true"}, shown(job)


def read(store: Store, owner: str | None, path: str) -> Reply:
    """``GET /jobs/{id}`` and its ``/attempts`` and ``/races``; ``GET /healthz``."""
    if path == "/healthz":
        return 200, {}, {"status": "ok"}
    parts = path.strip("/").split("/")
    if len(parts) not in (2, 3) or parts[0] != "jobs":
        return problem(404, "not_found", path)
    if not owner:
        return problem(401, "owner_missing", "send the owner in X-Owner")
    job = store.job(parts[1], owner)
    if job is None:
        return problem(404, "not_found", path)
    if len(parts) == 2:
        return 200, {}, shown(job)
    if parts[2] == "attempts":
        return 200, {}, store.attempts(job["id"])
    if parts[2] == "races":
        return 200, {}, store.races(job["id"])
    return problem(404, "not_found", path)


def serve_stdlib(store: Store, start_worker: Callable[[dict[str, Any]], None],
                 host: str, port: int) -> None:
    """The API on the standard library's threaded HTTP server, until interrupted."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                body = None
            if self.path.rstrip("/") != "/jobs":
                self._reply(problem(404, "not_found", self.path))
                return
            self._reply(create(store, self.headers.get("X-Owner"),
                               self.headers.get("Idempotency-Key"), body, start_worker))

        def do_GET(self) -> None:
            self._reply(read(store, self.headers.get("X-Owner"), self.path))

        def _reply(self, reply: Reply) -> None:
            status, headers, body = reply
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # the default backlog of 5 resets connections under a burst

    server = Server((host, port), Handler)
    print(f"listening on http://{host}:{server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.05)


# -- configuration ------------------------------------------------------------------------------
def arguments(doc: str | None, **extra: tuple[type, Any, str]) -> argparse.Namespace:
    """The options every service has (and ``extra``: name -> (type, default, help)). Every
    service calls it first, from its main thread, so it also sets up the stacks on a signal
    (:func:`stacks_on_signal`)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--db", default="", help="SQLite file (default: a new temp file)")
    parser.add_argument("--timeout", type=float, default=0.5,
                        help="seconds the worker waits for a provider before it times out")
    parser.add_argument("--defect", choices=DEFECTS, default="none",
                        help="break one API rule (see examples/drill/README.md)")
    parser.add_argument("--check-gap", type=float, default=0.25,
                        help="check-then-insert: seconds between the look-up and the insert")
    for name, (kind, default, text) in extra.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default, help=text)
    args = parser.parse_args()
    stacks_on_signal()
    if not args.db:
        args.db = os.path.join(tempfile.mkdtemp(prefix="drill-example-"), "jobs.db")
    return args


STACKS_END = "-- end of stacks --"


def stacks_on_signal() -> None:
    """``kill -USR1 <pid>`` prints every thread's stack to stderr, then ``-- end of stacks --``,
    the service running on (a consistent picture: taken between two bytecodes of the main
    thread). A service whose threads cannot run (one of them stuck holding the interpreter's
    lock) cannot answer that: ``kill -USR2 <pid>`` prints the stacks from C, without the lock
    (faulthandler; on threads that are running it can read a frame while it changes and stop
    part way, so it is the second choice)."""
    signal.signal(signal.SIGUSR1, _print_stacks)
    if hasattr(faulthandler, "register"):  # not on Windows
        faulthandler.register(signal.SIGUSR2, all_threads=True)


def _print_stacks(signum: int, frame: Any) -> None:
    # raw writes: the interrupted code may be inside a write to stderr (its buffer's lock)
    text = []
    for ident, top in sys._current_frames().items():
        text.append(f"Thread {ident:#x} (most recent call last):\n")
        text.extend(traceback.format_stack(top))
    text.append(STACKS_END + "\n")
    data = "".join(text).encode("utf-8", "replace")
    while data:
        data = data[os.write(2, data):]


def store_of(args: argparse.Namespace) -> Store:
    """The store the options describe (its file, its defect)."""
    return Store(args.db, args.defect, args.check_gap)


def openai_base_url() -> str | None:
    """Where the primary is: ``OPENAI_BASE_URL`` (unset: the SDK's default, api.openai.com)."""
    return os.environ.get("OPENAI_BASE_URL") or None


def anthropic_base_url() -> str | None:
    return os.environ.get("ANTHROPIC_BASE_URL") or None


def api_key(name: str) -> str:
    return os.environ.get(name) or "sk-example-not-a-secret"


PRIMARY_MODEL = os.environ.get("PRIMARY_MODEL", "gpt-4o-mini")
FALLBACK_MODEL = os.environ.get("FALLBACK_MODEL", "claude-3-5-haiku-20241022")


def fail(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(2)
