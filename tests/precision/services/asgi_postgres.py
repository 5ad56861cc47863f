"""Precision service (b): API.md as a plain ASGI callable (no framework) under **hypercorn**, on
PostgreSQL through psycopg 3's async pool.

- Numbering: versions start at **10** and rise by **2** per claim; ids are ULID-like (48-bit
  milliseconds + 80 random bits, Crockford base32) with a type prefix (``J…``, ``A…``).
- A job becomes ``running`` when its first attempt is *dispatched* (not when it starts).
- Race digest: SHA-256 of the result as pretty-printed JSON (``indent=2``, keys as sent).
- Concurrency: ``INSERT … ON CONFLICT (owner, idem_key) DO NOTHING`` for creates; every attempt
  start and event locks the job row (``SELECT … FOR UPDATE``) in one transaction; the claim is
  one guarded ``UPDATE``.
- Times: RFC 3339, milliseconds, ``Z``. Responses are chunked (no ``Content-Length``).
- Test hooks (outside API.md, no auth): ``POST /_test/fail-next`` (the next create's handler
  raises: hypercorn's empty 500, nothing stored), ``GET /_test/stats`` → ``{"jobs": <rows>}``.

Run: ``PRECISION_PG_DSN=postgresql://… python -m tests.precision.services.asgi_postgres``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import socket
import time
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from tests.precision.services import common
from tests.precision.services.canon import fingerprint
from tests.precision.services.common import Invalid

FIRST_VERSION, STEP = 10, 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS p_jobs (
  id text PRIMARY KEY, owner text NOT NULL, idem_key text NOT NULL, fingerprint text NOT NULL,
  intent jsonb NOT NULL, status text NOT NULL, version bigint NOT NULL, completed_by text,
  result jsonb, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
  UNIQUE (owner, idem_key));
CREATE TABLE IF NOT EXISTS p_attempts (
  seq bigserial PRIMARY KEY, id text UNIQUE NOT NULL, job_id text NOT NULL REFERENCES p_jobs,
  provider text NOT NULL, state text NOT NULL, read_version bigint NOT NULL, error jsonb,
  reason text, result_key text, outcome text, created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS p_races (
  seq bigserial PRIMARY KEY, job_id text NOT NULL, attempt_id text NOT NULL,
  at timestamptz NOT NULL, payload_sha256 text NOT NULL, winner_attempt_id text,
  reason text NOT NULL);
"""
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(prefix: str) -> str:
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(CROCKFORD[digit])
    return prefix + "".join(reversed(chars))


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def job_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "idempotency_key": row["idem_key"],
            "fingerprint": row["fingerprint"], **row["intent"], "status": row["status"],
            "version": row["version"], "completed_by": row["completed_by"],
            "result": row["result"], "created_at": stamp(row["created_at"]),
            "updated_at": stamp(row["updated_at"])}


def attempt_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "job_id": row["job_id"], "provider": row["provider"],
            "state": row["state"], "read_version": row["read_version"], "error": row["error"],
            "reason": row["reason"], "created_at": stamp(row["created_at"]),
            "updated_at": stamp(row["updated_at"])}


class Jobs:
    """API.md's operations on PostgreSQL."""

    def __init__(self, dsn: str) -> None:
        self.pool = AsyncConnectionPool(dsn, min_size=2, max_size=12, open=False,
                                        kwargs={"row_factory": dict_row})
        self.fail_next = False

    async def open(self) -> None:
        await self.pool.open(wait=True)
        async with self.pool.connection() as db, db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(712001)")  # replicas start together
            for statement in filter(str.strip, SCHEMA.split(";")):
                await db.execute(statement)

    async def close(self) -> None:
        await self.pool.close()

    async def stats(self) -> dict[str, int]:
        async with self.pool.connection() as db:
            row = await (await db.execute("SELECT count(*) AS n FROM p_jobs")).fetchone()
        return {"jobs": int(row["n"]) if row else 0}

    async def create(self, owner: str, key: str, intent: dict[str, Any]) -> tuple[int, dict]:
        digest = fingerprint(intent)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("injected handler failure")
        async with self.pool.connection() as db:
            now = datetime.now(UTC)
            cur = await db.execute(
                "INSERT INTO p_jobs (id, owner, idem_key, fingerprint, intent, status, version, "
                "created_at, updated_at) VALUES (%s,%s,%s,%s,%s,'pending',%s,%s,%s) "
                "ON CONFLICT (owner, idem_key) DO NOTHING RETURNING *",
                (ulid("J"), owner, key, digest, Jsonb(intent), FIRST_VERSION, now, now))
            row = await cur.fetchone()
            created = row is not None
            if row is None:
                row = await (await db.execute(
                    "SELECT * FROM p_jobs WHERE owner=%s AND idem_key=%s",
                    (owner, key))).fetchone()
        assert row is not None
        if row["fingerprint"] != digest:
            raise Invalid(409, "idempotency_key_reused",
                          "this key was already used with another body")
        return (201 if created else 200), job_json(row)

    @staticmethod
    async def _job(db: AsyncConnection, owner: str, job_id: str, lock: bool = False) -> dict:
        row = await (await db.execute(
            "SELECT * FROM p_jobs WHERE id=%s AND owner=%s" + (" FOR UPDATE" if lock else ""),
            (job_id, owner))).fetchone()
        if row is None:
            raise Invalid(404, "not_found", "job not found")
        return dict(row)

    async def get(self, owner: str, job_id: str) -> dict:
        async with self.pool.connection() as db:
            return job_json(await self._job(db, owner, job_id))

    async def start(self, owner: str, job_id: str, provider: str) -> dict:
        async with self.pool.connection() as db, db.transaction():
            job = await self._job(db, owner, job_id, lock=True)
            if job["status"] in ("succeeded", "cancelled"):
                raise Invalid(409, "job_completed", "the job is already complete")
            blocking = await (await db.execute(
                "SELECT id FROM p_attempts WHERE job_id=%s AND state = ANY(%s) ORDER BY seq",
                (job_id, list(common.STATES_OPEN)))).fetchall()
            if len(blocking) >= job["intent"]["policy"]["max_open_attempts"]:
                raise Invalid(409, "attempt_in_flight", "an attempt is still open",
                              blocking_attempt_id=blocking[0]["id"])
            now = datetime.now(UTC)
            row = await (await db.execute(
                "INSERT INTO p_attempts (id, job_id, provider, state, read_version, created_at, "
                "updated_at) VALUES (%s,%s,%s,'starting',%s,%s,%s) RETURNING *",
                (ulid("A"), job_id, provider, job["version"], now, now))).fetchone()
        assert row is not None
        return attempt_json(row)

    async def listing(self, owner: str, job_id: str, table: str) -> list[dict]:
        async with self.pool.connection() as db:
            await self._job(db, owner, job_id)
            rows = await (await db.execute(
                f"SELECT * FROM {table} WHERE job_id=%s ORDER BY seq", (job_id,))).fetchall()
        if table == "p_attempts":
            return [attempt_json(r) for r in rows]
        return [{"attempt_id": r["attempt_id"], "at": stamp(r["at"]),
                 "payload_sha256": r["payload_sha256"],
                 "winner_attempt_id": r["winner_attempt_id"], "reason": r["reason"]}
                for r in rows]

    async def event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> dict:
        kind = event["type"]
        async with self.pool.connection() as db, db.transaction():
            job = await (await db.execute(
                "SELECT j.* FROM p_jobs j JOIN p_attempts a ON a.job_id = j.id "
                "WHERE a.id=%s AND j.owner=%s FOR UPDATE OF j", (attempt_id, owner))).fetchone()
            if job is None:
                raise Invalid(404, "not_found", "attempt not found")
            attempt = await (await db.execute("SELECT * FROM p_attempts WHERE id=%s",
                                              (attempt_id,))).fetchone()
            assert attempt is not None
            now = datetime.now(UTC)
            if kind == "succeeded":
                same = fingerprint(event["result"])
                if attempt["outcome"] and attempt["result_key"] == same:
                    return {**attempt_json(attempt), "outcome": attempt["outcome"]}
                if attempt["state"] == "cancelled" and not attempt["outcome"]:
                    await self._race(db, job, attempt_id, event["result"], "cancelled", now)
                    row = await (await db.execute(
                        "UPDATE p_attempts SET outcome='lost', result_key=%s WHERE id=%s "
                        "RETURNING *", (same, attempt_id))).fetchone()
                    assert row is not None
                    return {**attempt_json(row), "outcome": "lost"}
            sources, target = common.TRANSITIONS[kind]
            if attempt["state"] not in sources:
                raise Invalid(409, "invalid_transition",
                              f"{attempt['state']} -> {target} is not allowed",
                              **{"from": attempt["state"], "to": target})
            outcome = None
            if kind == "succeeded":
                outcome = await self._claim(db, job, attempt, event["result"], now)
            if kind == "dispatched" and job["status"] == "pending":
                await db.execute("UPDATE p_jobs SET status='running', updated_at=%s WHERE id=%s",
                                 (now, job["id"]))
            row = await (await db.execute(
                "UPDATE p_attempts SET state=%s, outcome=%s, result_key=%s, error=%s, "
                "reason=%s, updated_at=%s WHERE id=%s RETURNING *",
                (target, outcome, fingerprint(event["result"]) if outcome else None,
                 Jsonb(event["error"]) if kind == "failed" else None,
                 event.get("reason") if kind == "cancelled" else None, now,
                 attempt_id))).fetchone()
        assert row is not None
        reply = attempt_json(row)
        return {**reply, "outcome": outcome} if outcome else reply

    async def _claim(self, db: AsyncConnection, job: dict, attempt: dict, result: dict,
                     now: datetime) -> str:
        won = await db.execute(
            "UPDATE p_jobs SET result=%s, completed_by=%s, status='succeeded', "
            "version=version+%s, updated_at=%s "
            "WHERE id=%s AND version=%s AND completed_by IS NULL",
            (Jsonb(result), attempt["id"], STEP, now, job["id"], attempt["read_version"]))
        if won.rowcount == 1:
            return "won"
        await self._race(db, job, attempt["id"], result, "superseded", now)
        return "lost"

    @staticmethod
    async def _race(db: AsyncConnection, job: dict, attempt_id: str, result: dict, reason: str,
                    now: datetime) -> None:
        digest = hashlib.sha256(json.dumps(result, indent=2).encode()).hexdigest()
        await db.execute(
            "INSERT INTO p_races (job_id, attempt_id, at, payload_sha256, winner_attempt_id, "
            "reason) VALUES (%s,%s,%s,%s,%s,%s)",
            (job["id"], attempt_id, now, digest, job["completed_by"], reason))


class App:
    """The ASGI callable: routing, authentication, problem details. Any other exception (the
    injected failure included) reaches hypercorn, which answers an empty 500 and closes the
    connection (saying ``Connection: close``)."""

    def __init__(self, jobs: Jobs, tokens: dict[str, str]) -> None:
        self.jobs = jobs
        self.tokens = tokens

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        body = b""
        while True:  # always read the whole request first
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        try:
            status, payload, extra = await self._route(scope["method"], scope["path"], headers,
                                                       body)
            kind = "application/json"
        except Invalid as err:
            status, extra, kind = err.status, {}, "application/problem+json"
            payload = {"type": f"https://precision.test/problems/{err.code}",
                       "title": err.code, "status": err.status, "detail": err.detail,
                       "code": err.code, **err.extra}
        data = json.dumps(payload, separators=(",", ":")).encode()
        # No Content-Length: the server sends the body chunked, in two pieces.
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", kind.encode()),
            *((k.encode(), v.encode()) for k, v in extra.items())]})
        half = len(data) // 2
        await send({"type": "http.response.body", "body": data[:half], "more_body": True})
        await send({"type": "http.response.body", "body": data[half:]})

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.jobs.open()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.jobs.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _route(self, method: str, path: str, headers: dict[str, str],
                     body: bytes) -> tuple[int, Any, dict[str, str]]:
        parts = [p for p in path.split("/") if p]
        if (method, parts) == ("GET", ["healthz"]):
            return 200, {"status": "ok", "store": "postgresql"}, {}
        if (method, parts) == ("GET", ["openapi.json"]):
            return 200, {"openapi": "3.1.0", "info": {"title": "precision-b", "version": "1"},
                         "paths": {}}, {}
        if (method, parts) == ("POST", ["_test", "fail-next"]):
            self.jobs.fail_next = True
            return 200, {"armed": True}, {}
        if (method, parts) == ("GET", ["_test", "stats"]):
            return 200, await self.jobs.stats(), {}
        if not parts or parts[0] != "v1":
            raise Invalid(404, "not_found", "no such path")
        owner = common.owner_of(headers.get("authorization"), self.tokens)
        return await self._v1(method, parts[1:], owner, headers, body)

    async def _v1(self, method: str, parts: list[str], owner: str, headers: dict[str, str],
                  body: bytes) -> tuple[int, Any, dict[str, str]]:
        jobs = self.jobs
        match method, parts:
            case "POST", ["jobs"]:
                key = common.check_key(headers.get("idempotency-key"))
                status, job = await jobs.create(owner, key, common.parse_intent(_json(body)))
                return status, job, {} if status == 201 else {"Idempotent-Replayed": "true"}
            case "GET", ["jobs", job_id]:
                return 200, await jobs.get(owner, job_id), {}
            case "POST", ["jobs", job_id, "attempts"]:
                provider = _json(body).get("provider") if isinstance(_json(body), dict) else None
                if not isinstance(provider, str) or not provider:
                    raise Invalid(422, "invalid_request", "provider is required",
                                  field="provider")
                return 201, await jobs.start(owner, job_id, provider), {}
            case "GET", ["jobs", job_id, "attempts"]:
                return 200, await jobs.listing(owner, job_id, "p_attempts"), {}
            case "GET", ["jobs", job_id, "races"]:
                return 200, await jobs.listing(owner, job_id, "p_races"), {}
            case "POST", ["attempts", attempt_id, "events"]:
                return 200, await jobs.event(owner, attempt_id, common.parse_event(_json(body))), {}
        raise Invalid(404, "not_found", "no such path")


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise Invalid(422, "invalid_request", "the body is not JSON", field="body") from None


def main() -> None:
    parser = common.service_args(__doc__.splitlines()[0])
    args = parser.parse_args()
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind((args.host, args.port))
    sock.listen(128)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.loglevel = "CRITICAL"
    config.accesslog = None
    app = App(Jobs(os.environ["PRECISION_PG_DSN"]), common.load_tokens(args.tokens_file))
    common.announce(f"http://{args.host}:{sock.getsockname()[1]}")
    asyncio.run(serve(app, config))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
