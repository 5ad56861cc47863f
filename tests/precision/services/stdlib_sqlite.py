"""Precision service (a): API.md on the standard library alone.

- Server: ``http.server.ThreadingHTTPServer`` speaking **HTTP/1.0**: every response closes its
  connection (no keep-alive at all).
- Storage: SQLite (``sqlite3``), one connection per thread, WAL, every write a
  ``BEGIN IMMEDIATE`` transaction; ``UNIQUE (owner, idem_key)`` makes concurrent creates one row.
- Numbering: versions **start at 0** and rise by one per claim; ids are **UUID4** strings.
- Race digest: SHA-256 of the succeeded event's **raw request body** (not of the result alone).
- Times: RFC 3339 with microseconds and ``+00:00``.
- Test hooks (outside API.md, no auth): ``POST /_test/fail-next`` makes the next create's
  handler fail (500, nothing stored); the side effects are the rows of ``jobs`` (the target
  profile reads them with SQL).

Run: ``python -m tests.precision.services.stdlib_sqlite --db FILE [--port 0]``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.precision.services.canon import fingerprint
from tests.precision.services.common import (
    STATES_OPEN,
    TRANSITIONS,
    Invalid,
    announce,
    check_key,
    load_tokens,
    owner_of,
    parse_event,
    parse_intent,
    service_args,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
  intent TEXT NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL, completed_by TEXT,
  result TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE (owner, idem_key));
CREATE TABLE IF NOT EXISTS attempts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, job_id TEXT NOT NULL,
  provider TEXT NOT NULL, state TEXT NOT NULL, read_version INTEGER NOT NULL, error TEXT,
  reason TEXT, result_digest TEXT, outcome TEXT, created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS races (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, attempt_id TEXT NOT NULL,
  at TEXT NOT NULL, payload_sha256 TEXT NOT NULL, winner_attempt_id TEXT, reason TEXT NOT NULL);
"""
FIRST_VERSION = 0


def now() -> str:
    return datetime.now(UTC).isoformat()


class Store:
    """Jobs, attempts and races in one SQLite file; safe across threads and processes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.local = threading.local()
        with self._open() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0,
                             check_same_thread=False)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout = 30000")
        return db

    def db(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = self._open()
        return conn

    def write(self) -> _Txn:
        return _Txn(self.db())

    # -- jobs --------------------------------------------------------------------------------
    def create(self, owner: str, key: str, intent: dict[str, Any], fail: bool) -> tuple[int, dict]:
        digest = fingerprint(intent)
        with self.write() as db:
            stamp = now()
            inserted = db.execute(
                "INSERT INTO jobs (id, owner, idem_key, fingerprint, intent, status, version, "
                "created_at, updated_at) VALUES (?,?,?,?,?, 'pending', ?, ?, ?) "
                "ON CONFLICT (owner, idem_key) DO NOTHING",
                (str(uuid.uuid4()), owner, key, digest, json.dumps(intent), FIRST_VERSION,
                 stamp, stamp)).rowcount
            if fail:
                raise RuntimeError("injected handler failure")  # rolls the insert back
            row = db.execute("SELECT * FROM jobs WHERE owner=? AND idem_key=?",
                             (owner, key)).fetchone()
        if row["fingerprint"] != digest:
            raise Invalid(409, "idempotency_key_reused",
                          "this Idempotency-Key was used with another request body")
        return (201 if inserted else 200), job_json(row)

    def job_row(self, db: sqlite3.Connection, owner: str, job_id: str) -> sqlite3.Row:
        row = db.execute("SELECT * FROM jobs WHERE id=? AND owner=?", (job_id, owner)).fetchone()
        if row is None:
            raise Invalid(404, "not_found", "no such job")
        return row

    def get(self, owner: str, job_id: str) -> dict:
        return job_json(self.job_row(self.db(), owner, job_id))

    # -- attempts ----------------------------------------------------------------------------
    def start(self, owner: str, job_id: str, provider: str) -> dict:
        with self.write() as db:
            job = self.job_row(db, owner, job_id)
            if job["status"] in ("succeeded", "cancelled"):
                raise Invalid(409, "job_completed", f"the job is {job['status']}")
            limit = json.loads(job["intent"])["policy"]["max_open_attempts"]
            open_ = db.execute(
                "SELECT id FROM attempts WHERE job_id=? AND state IN (?,?,?) ORDER BY seq",
                (job_id, *STATES_OPEN)).fetchall()
            if len(open_) >= limit:
                raise Invalid(409, "attempt_in_flight", "the job has an open attempt",
                              blocking_attempt_id=open_[0]["id"])
            stamp = now()
            attempt_id = str(uuid.uuid4())
            db.execute("INSERT INTO attempts (id, job_id, provider, state, read_version, "
                       "created_at, updated_at) VALUES (?,?,?, 'starting', ?, ?, ?)",
                       (attempt_id, job_id, provider, job["version"], stamp, stamp))
            if job["status"] == "pending":
                db.execute("UPDATE jobs SET status='running', updated_at=? WHERE id=?",
                           (stamp, job_id))
            return attempt_json(db.execute("SELECT * FROM attempts WHERE id=?",
                                           (attempt_id,)).fetchone())

    def attempts(self, owner: str, job_id: str) -> list[dict]:
        db = self.db()
        self.job_row(db, owner, job_id)
        rows = db.execute("SELECT * FROM attempts WHERE job_id=? ORDER BY seq", (job_id,))
        return [attempt_json(r) for r in rows.fetchall()]

    def races(self, owner: str, job_id: str) -> list[dict]:
        db = self.db()
        self.job_row(db, owner, job_id)
        rows = db.execute("SELECT * FROM races WHERE job_id=? ORDER BY seq", (job_id,))
        return [{"attempt_id": r["attempt_id"], "at": r["at"],
                 "payload_sha256": r["payload_sha256"],
                 "winner_attempt_id": r["winner_attempt_id"], "reason": r["reason"]}
                for r in rows.fetchall()]

    def event(self, owner: str, attempt_id: str, event: dict[str, Any], raw: bytes) -> dict:
        kind = event["type"]
        with self.write() as db:
            attempt = db.execute(
                "SELECT attempts.* FROM attempts JOIN jobs ON jobs.id = attempts.job_id "
                "WHERE attempts.id=? AND jobs.owner=?", (attempt_id, owner)).fetchone()
            if attempt is None:
                raise Invalid(404, "not_found", "no such attempt")
            state = attempt["state"]
            stamp = now()
            digest = same = None
            if kind == "succeeded":
                digest = hashlib.sha256(raw).hexdigest()  # the race record's digest
                same = fingerprint(event["result"])  # what "the same result" means
                if attempt["result_digest"] == same and attempt["outcome"]:
                    # the same result again: the same reply, nothing changes
                    return {**attempt_json(attempt), "outcome": attempt["outcome"]}
                if state == "cancelled" and attempt["outcome"] is None:
                    job = db.execute("SELECT * FROM jobs WHERE id=?",
                                     (attempt["job_id"],)).fetchone()
                    self._lose(db, attempt, job, digest, "attempt was cancelled", stamp)
                    db.execute("UPDATE attempts SET result_digest=?, outcome='lost' WHERE id=?",
                               (same, attempt_id))
                    row = db.execute("SELECT * FROM attempts WHERE id=?", (attempt_id,))
                    return {**attempt_json(row.fetchone()), "outcome": "lost"}
            sources, target = TRANSITIONS[kind]
            if state not in sources:
                raise Invalid(409, "invalid_transition",
                              f"an attempt in state {state} cannot become {target}",
                              **{"from": state, "to": target})
            outcome = None
            if kind == "succeeded":
                assert digest is not None
                outcome = self._claim(db, attempt, event["result"], digest, stamp)
            db.execute(
                "UPDATE attempts SET state=?, updated_at=?, outcome=?, result_digest=?, "
                "error=?, reason=? WHERE id=?",
                (target, stamp, outcome, same,
                 json.dumps(event["error"]) if kind == "failed" else None,
                 event.get("reason") if kind == "cancelled" else None, attempt_id))
            reply = attempt_json(db.execute("SELECT * FROM attempts WHERE id=?",
                                            (attempt_id,)).fetchone())
        return {**reply, "outcome": outcome} if outcome else reply

    def _claim(self, db: sqlite3.Connection, attempt: sqlite3.Row, result: dict, digest: str,
               stamp: str) -> str:
        won = db.execute(
            "UPDATE jobs SET result=?, completed_by=?, status='succeeded', version=version+1, "
            "updated_at=? WHERE id=? AND version=? AND completed_by IS NULL",
            (json.dumps(result), attempt["id"], stamp, attempt["job_id"],
             attempt["read_version"])).rowcount
        if won:
            return "won"
        job = db.execute("SELECT * FROM jobs WHERE id=?", (attempt["job_id"],)).fetchone()
        reason = ("job already completed" if job["completed_by"] else
                  "job changed since the attempt read it")
        self._lose(db, attempt, job, digest, reason, stamp)
        return "lost"

    @staticmethod
    def _lose(db: sqlite3.Connection, attempt: sqlite3.Row, job: sqlite3.Row, digest: str,
              reason: str, stamp: str) -> None:
        db.execute("INSERT INTO races (job_id, attempt_id, at, payload_sha256, "
                   "winner_attempt_id, reason) VALUES (?,?,?,?,?,?)",
                   (job["id"], attempt["id"], stamp, digest, job["completed_by"], reason))


class _Txn:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.conn = db

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: object, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if kind else "COMMIT")


def job_json(row: sqlite3.Row) -> dict:
    intent = json.loads(row["intent"])
    return {"id": row["id"], "idempotency_key": row["idem_key"],
            "fingerprint": row["fingerprint"], **intent, "status": row["status"],
            "version": row["version"], "completed_by": row["completed_by"],
            "result": json.loads(row["result"]) if row["result"] else None,
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


def attempt_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "job_id": row["job_id"], "provider": row["provider"],
            "state": row["state"], "read_version": row["read_version"],
            "error": json.loads(row["error"]) if row["error"] else None,
            "cancel_reason": row["reason"], "created_at": row["created_at"],
            "updated_at": row["updated_at"]}


ROUTES = [
    ("POST", re.compile(r"^/v1/jobs$"), "create"),
    ("GET", re.compile(r"^/v1/jobs/(?P<job>[^/]+)$"), "get"),
    ("POST", re.compile(r"^/v1/jobs/(?P<job>[^/]+)/attempts$"), "start"),
    ("GET", re.compile(r"^/v1/jobs/(?P<job>[^/]+)/attempts$"), "attempts"),
    ("GET", re.compile(r"^/v1/jobs/(?P<job>[^/]+)/races$"), "races"),
    ("POST", re.compile(r"^/v1/attempts/(?P<attempt>[^/]+)/events$"), "event"),
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read answers, not logs (and a token must never be logged)."""

    def _send(self, status: int, body: Any, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _problem(self, err: Invalid) -> None:
        self._send(err.status, {"type": f"urn:precision:problem:{err.code}",
                                "title": err.code.replace("_", " "), "status": err.status,
                                "detail": err.detail, "code": err.code, **err.extra},
                   content_type="application/problem+json")

    def _body(self) -> tuple[bytes, Any]:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return raw, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Invalid(422, "invalid_request", "body: not JSON", field="body") from None

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        try:
            self._route(method)
        except Invalid as err:
            self._problem(err)
        except Exception:
            self._problem(Invalid(500, "internal", "the handler failed"))

    def _route(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        server = self.server
        if path == "/healthz" and method == "GET":
            return self._send(200, {"status": "ok", "store": "sqlite"})
        if path == "/openapi.json" and method == "GET":
            return self._send(200, {"openapi": "3.1.0",
                                    "info": {"title": "precision stdlib", "version": "1"},
                                    "paths": {}})
        if path == "/_test/fail-next" and method == "POST":
            with server.fault_lock:
                server.fail_next = True
            return self._send(200, {"armed": True})
        for verb, pattern, action in ROUTES:
            match = pattern.match(path)
            if match and verb == method:
                owner = owner_of(self.headers.get("Authorization"), server.tokens)
                return getattr(self, f"_{action}")(owner, **match.groupdict())
        if any(p.match(path) for _, p, _ in ROUTES):
            raise Invalid(405, "method_not_allowed", f"{method} is not allowed here")
        raise Invalid(404, "not_found", "no such resource")

    def _create(self, owner: str) -> None:
        key = check_key(self.headers.get("Idempotency-Key"))
        _, body = self._body()
        intent = parse_intent(body)
        with self.server.fault_lock:
            fail, self.server.fail_next = self.server.fail_next, False
        status, job = self.server.store.create(owner, key, intent, fail)
        self._send(status, job, headers={} if status == 201 else {"Idempotent-Replayed": "true"})

    def _get(self, owner: str, job: str) -> None:
        self._send(200, self.server.store.get(owner, job))

    def _start(self, owner: str, job: str) -> None:
        _, body = self._body()
        provider = body.get("provider") if isinstance(body, dict) else None
        if not isinstance(provider, str) or not provider:
            raise Invalid(422, "invalid_request", "provider: must be a string", field="provider")
        self._send(201, self.server.store.start(owner, job, provider))

    def _attempts(self, owner: str, job: str) -> None:
        self._send(200, self.server.store.attempts(owner, job))

    def _races(self, owner: str, job: str) -> None:
        self._send(200, self.server.store.races(owner, job))

    def _event(self, owner: str, attempt: str) -> None:
        raw, body = self._body()
        self._send(200, self.server.store.event(owner, attempt, parse_event(body), raw))


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], store: Store, tokens: dict[str, str]) -> None:
        super().__init__(address, Handler)
        self.store = store
        self.tokens = tokens
        self.fault_lock = threading.Lock()
        self.fail_next = False


def main() -> None:
    parser = service_args(__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    server = Server((args.host, args.port), Store(args.db), load_tokens(args.tokens_file))
    announce(f"http://{args.host}:{server.server_address[1]}")
    server.serve_forever()


if __name__ == "__main__":
    main()
