"""What the example job services share: their SQLite job store, their HTTP API, their providers.

Not part of failover-harness: these services stand for *your* LLM job service. Each one is a
jobs API (``POST /v1/jobs`` with an ``Idempotency-Key`` header and ``{"input": {"text": …}}``,
``GET /v1/jobs/{id}``, ``GET /v1/jobs/{id}/attempts``, ``GET /v1/jobs/{id}/races``,
``GET /healthz``) in front of a worker that sends the input's text as the prompt to a primary
provider (the OpenAI chat-completions wire at ``OPENAI_BASE_URL``) and a fallback (the Anthropic
messages wire at ``ANTHROPIC_BASE_URL``). The services differ only in how the worker times out,
falls back and writes the result; that is where the bugs people report live.

Owners come from ``Authorization: Bearer <owner>`` (a toy: the token *is* the owner; no token is
the owner ``anonymous``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

import rfc8785


def missing_extra(extra: str, exc: ImportError) -> NoReturn:
    """An example started without its extra: say which to install, exit 2, no traceback."""
    print(f"error: {os.path.basename(sys.argv[0])} needs the Python package "
          f"{exc.name or str(exc)!r}, which is not installed\n"
          f"  fix: pip install 'failover-harness[{extra}]'", file=sys.stderr)
    raise SystemExit(2)


SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL, input TEXT NOT NULL, status TEXT NOT NULL,
  version INTEGER NOT NULL, completed_by TEXT, result TEXT, error TEXT,
  created_at REAL NOT NULL, updated_at REAL NOT NULL,
  UNIQUE (owner, idempotency_key));
CREATE TABLE IF NOT EXISTS attempts (
  id TEXT PRIMARY KEY, job_id TEXT NOT NULL, provider TEXT NOT NULL, state TEXT NOT NULL,
  read_version INTEGER NOT NULL, error TEXT, started_at REAL NOT NULL, ended_at REAL);
CREATE TABLE IF NOT EXISTS races (
  attempt_id TEXT NOT NULL, job_id TEXT NOT NULL, at REAL NOT NULL,
  payload_sha256 TEXT NOT NULL, winner_attempt_id TEXT, reason TEXT NOT NULL);
"""
OPEN_STATES = ("starting", "running", "unknown")


class KeyReused(Exception):
    """The key is the owner's already, for another input."""


@dataclass(frozen=True)
class Attempt:
    id: str
    job_id: str
    provider: str
    read_version: int


class Store:
    """Jobs, attempts and races in one SQLite file (WAL; a connection per thread)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._db().executescript(SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def create_job(self, owner: str, key: str, job_input: Any) -> tuple[dict[str, Any], bool]:
        """One insert-or-conflict statement: (the job, whether this call created it)."""
        text = rfc8785.dumps(job_input).decode()  # canonical: 1.0 is 1, key order is moot
        fingerprint = hashlib.sha256(text.encode()).hexdigest()
        now, job_id = time.time(), uuid.uuid4().hex
        created = self._db().execute(
            "INSERT INTO jobs (id, owner, idempotency_key, fingerprint, input, status, version,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'running', 1, ?, ?)"
            " ON CONFLICT (owner, idempotency_key) DO NOTHING",
            (job_id, owner, key, fingerprint, text, now, now)).rowcount == 1
        row = self._db().execute("SELECT * FROM jobs WHERE owner = ? AND idempotency_key = ?",
                                 (owner, key)).fetchone()
        if row["fingerprint"] != fingerprint:
            raise KeyReused(key)
        return _job(row), created

    def job(self, job_id: str, owner: str | None = None) -> dict[str, Any] | None:
        row = self._db().execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None or (owner is not None and row["owner"] != owner):
            return None
        return _job(row)

    def start_attempt(self, job_id: str, provider: str) -> Attempt:
        attempt = Attempt(uuid.uuid4().hex, job_id, provider, self._version(job_id))
        self._db().execute(
            "INSERT INTO attempts (id, job_id, provider, state, read_version, started_at)"
            " VALUES (?, ?, ?, 'running', ?, ?)",
            (attempt.id, job_id, provider, attempt.read_version, time.time()))
        return attempt

    def end_attempt(self, attempt: Attempt, state: str, error: str = "") -> None:
        """``unknown`` is open (a timeout); ``succeeded``/``failed`` end the attempt."""
        ended = None if state in OPEN_STATES else time.time()
        self._db().execute("UPDATE attempts SET state = ?, error = ?, ended_at = ? WHERE id = ?",
                           (state, error or None, ended, attempt.id))

    def claim(self, attempt: Attempt, result: Any) -> bool:
        """The compare-and-swap: True if this attempt's result became the job's; else the
        payload is dropped and the lost claim recorded as a race, in the same transaction."""
        db, now = self._db(), time.time()
        db.execute("BEGIN IMMEDIATE")
        try:
            won = db.execute(
                "UPDATE jobs SET result = ?, completed_by = ?, status = 'succeeded',"
                " version = version + 1, updated_at = ? WHERE id = ? AND version = ?"
                " AND completed_by IS NULL",
                (json.dumps(result), attempt.id, now, attempt.job_id,
                 attempt.read_version)).rowcount == 1
            if not won:
                digest = hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()
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

    def write_result(self, attempt: Attempt, result: Any) -> None:
        """A plain write, no compare-and-swap (what the flawed twins do)."""
        self._db().execute(
            "UPDATE jobs SET result = ?, completed_by = ?, status = 'succeeded', error = NULL,"
            " version = version + 1, updated_at = ? WHERE id = ?",
            (json.dumps(result), attempt.id, time.time(), attempt.job_id))
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


def _job(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "idempotency_key": row["idempotency_key"],
            "input": json.loads(row["input"]), "status": row["status"],
            "version": row["version"], "completed_by": row["completed_by"],
            "result": json.loads(row["result"]) if row["result"] else None,
            "error": row["error"]}


# -- the API, independent of the HTTP stack ----------------------------------------------------
Reply = tuple[int, dict[str, str], Any]


def create(store: Store, owner: str, key: str | None, body: Any,
           start_worker: Callable[[dict[str, Any]], None]) -> Reply:
    """``POST /v1/jobs``: 201 and a new worker, 200 for a replay, 400/409/422 otherwise."""
    if not key:
        return 400, {}, {"code": "idempotency_key_missing", "detail": "send Idempotency-Key"}
    if len(key) > 255 or not key.isprintable() or " " in key:
        return 400, {}, {"code": "idempotency_key_invalid", "detail": "1-255 printable ASCII"}
    if not isinstance(body, dict) or not isinstance(body.get("input"), dict):
        return 422, {}, {"code": "invalid_request", "detail": "field 'input' must be an object"}
    try:
        job, created = store.create_job(owner, key, body["input"])
    except rfc8785.CanonicalizationError as exc:
        return 422, {}, {"code": "invalid_request", "detail": f"field 'input': {exc}"}
    except KeyReused:
        return 409, {}, {"code": "idempotency_key_reused", "detail": "another input, same key"}
    if created:
        start_worker(job)
        return 201, {}, job
    return 200, {"Idempotent-Replayed": "true"}, job


def read(store: Store, owner: str, path: str) -> Reply:
    """``GET /v1/jobs/{id}`` and its ``/attempts`` and ``/races``; ``GET /healthz``."""
    if path == "/healthz":
        return 200, {}, {"status": "ok"}
    parts = path.strip("/").split("/")
    if len(parts) < 3 or parts[:2] != ["v1", "jobs"] or len(parts) > 4:
        return 404, {}, {"code": "not_found"}
    job = store.job(parts[2], owner)
    if job is None:
        return 404, {}, {"code": "not_found"}
    if len(parts) == 3:
        return 200, {}, job
    if parts[3] == "attempts":
        return 200, {}, store.attempts(job["id"])
    if parts[3] == "races":
        return 200, {}, store.races(job["id"])
    return 404, {}, {"code": "not_found"}


def owner_of(authorization: str | None) -> str:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or "anonymous"
    return "anonymous"


def prompt_of(job: dict[str, Any]) -> str:
    """The prompt a worker sends: the input's text (the whole input as JSON if it has none)."""
    text = job["input"].get("text")
    return text if isinstance(text, str) else json.dumps(job["input"], sort_keys=True)


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
            if self.path.rstrip("/") != "/v1/jobs":
                self._reply((404, {}, {"code": "not_found"}))
                return
            owner = owner_of(self.headers.get("Authorization"))
            self._reply(create(store, owner, self.headers.get("Idempotency-Key"), body,
                               start_worker))

        def do_GET(self) -> None:
            self._reply(read(store, owner_of(self.headers.get("Authorization")), self.path))

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
    """The options every service has (and ``extra``: name -> (type, default, help))."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--db", default="", help="SQLite file (default: a new temp file)")
    parser.add_argument("--timeout", type=float, default=0.5,
                        help="seconds the worker waits for a provider before it times out")
    for name, (kind, default, text) in extra.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default, help=text)
    args = parser.parse_args()
    if not args.db:
        import tempfile
        args.db = os.path.join(tempfile.mkdtemp(prefix="drill-example-"), "jobs.db")
    return args


def openai_base_url() -> str | None:
    """Where the primary is: ``OPENAI_BASE_URL`` (unset: the SDK's default, api.openai.com)."""
    return os.environ.get("OPENAI_BASE_URL") or None


def anthropic_base_url() -> str | None:
    return os.environ.get("ANTHROPIC_BASE_URL") or None


def api_key(name: str) -> str:
    return os.environ.get(name) or "sk-example-not-a-secret"


PRIMARY_MODEL = os.environ.get("PRIMARY_MODEL", "gpt-4o-mini")
FALLBACK_MODEL = os.environ.get("FALLBACK_MODEL", "claude-3-5-haiku-20241022")


def result_of(provider: str, text: str) -> dict[str, Any]:
    return {"text": text, "provider": provider}


def fail(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(2)
