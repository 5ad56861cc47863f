"""A jobs-only service with a correct, middleware-style idempotency layer (IETF draft style).

    python examples/correct_service.py --port 8801 --db /tmp/correct.db

``POST /jobs`` with ``Idempotency-Key``:

1. The key is *claimed* with one statement, ``INSERT … ON CONFLICT DO NOTHING`` on
   ``(owner, key)``: there is no window between looking for the key and taking it.
2. A duplicate while the first request runs gets ``409 {"error": "request_in_progress"}``
   (``--busy-status 423`` answers ``423 Locked`` instead): it never ran, and says so; a client
   retries and receives the job.
3. The response is stored under the key *before* the key stops being "in progress", in the same
   statement that marks it done: a duplicate sees either "in progress" or the stored response.
4. A replay returns the stored status and body with ``Idempotent-Replayed: true``; the same key
   with another body (by canonical JSON: key order and ``1`` vs ``1.0`` do not matter) is
   ``422 {"error": "key_reused"}``. ``--fingerprint bytes`` compares the exact bytes instead
   (then a re-serialised body is another payload, rejected — declare it in the profile).
5. If the handler fails (5xx), ``--error-policy retry`` (default) forgets the key so a retry
   runs again; ``--error-policy final`` stores the failure and replays it.
6. A key held "in progress" longer than ``--lease-s`` (its holder crashed) may be taken over.

What a middleware cannot do: share the handler's transaction. A *process crash* between the
handler's commit and step 3 would let a retry run again after the lease; a handler that must
survive that writes its side effect and the stored response in one transaction.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import time
from typing import Any

from jobs_app import (  # type: ignore[import-not-found]
    ASGIApp,
    Receive,
    Scope,
    Send,
    build_parser,
    call_app,
    fingerprint,
    jobs_app,
    open_db,
    owner_of,
    read_body,
    respond,
    serve,
    served,
)
from starlette.datastructures import Headers

SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency (
    owner TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    state TEXT NOT NULL,              -- in_progress | done
    locked_at REAL NOT NULL,
    status INTEGER, body BLOB,
    PRIMARY KEY (owner, key)
);
"""


class IdempotencyMiddleware:
    """Idempotency-Key on ``POST /jobs``, as described in the module docstring."""

    def __init__(self, app: ASGIApp, db: sqlite3.Connection, *, lease_s: float = 5.0,
                 error_policy: str = "retry", busy_status: int = 409,
                 by_bytes: bool = False) -> None:
        self.app = app
        self.by_bytes = by_bytes
        self.db = db
        self.lease_s = lease_s
        self.error_policy = error_policy
        self.busy_status = busy_status
        db.executescript(SCHEMA)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/jobs":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        key = headers.get("idempotency-key")
        if not key:
            await respond(send, 400, {"error": "idempotency_key_missing"})
            return
        raw = await read_body(receive)
        try:
            body = json.loads(raw)
        except ValueError:
            await respond(send, 400, {"error": "invalid_json"})
            return
        owner = owner_of(headers)
        fp = hashlib.sha256(raw).hexdigest() if self.by_bytes else fingerprint(body)
        refusal = self._claim(owner, key, fp)
        if refusal is not None:
            await respond(send, *refusal)
            return
        scope.setdefault("state", {})["json"] = body
        try:
            status, out_headers, content = await call_app(self.app, scope, raw)
        except BaseException:
            self._forget(owner, key)
            raise
        if status >= 500 and self.error_policy == "retry":
            self._forget(owner, key)  # the retry runs again
        else:
            self.db.execute(
                "UPDATE idempotency SET state = 'done', status = ?, body = ? "
                "WHERE owner = ? AND key = ?", (status, content, owner, key))
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        await send({"type": "http.response.body", "body": content})

    def _claim(self, owner: str, key: str,
               fp: str) -> tuple[int, bytes | dict[str, Any], dict[str, str]] | None:
        """None when this request now holds the key; else the answer to send instead."""
        while True:
            now = time.time()
            taken = self.db.execute(
                "INSERT INTO idempotency (owner, key, fingerprint, state, locked_at) "
                "VALUES (?, ?, ?, 'in_progress', ?) ON CONFLICT (owner, key) DO NOTHING",
                (owner, key, fp, now)).rowcount
            if taken:
                return None
            row = self.db.execute(
                "SELECT fingerprint, state, locked_at, status, body FROM idempotency "
                "WHERE owner = ? AND key = ?", (owner, key)).fetchone()
            if row is None:
                continue  # forgotten between the two statements: claim again
            stored_fp, state, locked_at, status, content = row
            if stored_fp != fp:
                return 422, {"error": "key_reused",
                             "detail": "this key was used with another request body"}, {}
            if state == "done":
                return status, content, {"Idempotent-Replayed": "true"}
            if now - locked_at < self.lease_s:
                return self.busy_status, {"error": "request_in_progress"}, {"Retry-After": "0"}
            took_over = self.db.execute(  # the holder died: take the key over, exactly once
                "UPDATE idempotency SET locked_at = ? WHERE owner = ? AND key = ? "
                "AND state = 'in_progress' AND locked_at = ?", (now, owner, key, locked_at))
            if took_over.rowcount:
                return None

    def _forget(self, owner: str, key: str) -> None:
        self.db.execute("DELETE FROM idempotency WHERE owner = ? AND key = ?", (owner, key))


def build(args: argparse.Namespace) -> ASGIApp:
    db = open_db(args.db)
    app = jobs_app(db, work_ms=args.work_ms, fail_file=args.fail_file)
    layer = IdempotencyMiddleware(app, db, lease_s=args.lease_s, error_policy=args.error_policy,
                                  busy_status=args.busy_status,
                                  by_bytes=args.fingerprint == "bytes")
    return served(layer, report_ms=args.report_ms)


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lease-s", type=float, default=5.0,
                        help="a key held in progress longer than this may be taken over")
    parser.add_argument("--error-policy", choices=["retry", "final"], default="retry",
                        help="after a 5xx: retry = forget the key, final = replay the failure")
    parser.add_argument("--busy-status", type=int, choices=[409, 423], default=409,
                        help="the answer to a duplicate while the first request runs")
    parser.add_argument("--fingerprint", choices=["canonical", "bytes"], default="canonical",
                        help="compare request bodies as canonical JSON or as exact bytes")


if __name__ == "__main__":
    serve(build, build_parser("A jobs-only service with a correct idempotency middleware.",
                              options))
