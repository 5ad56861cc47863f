"""A jobs service on PostgreSQL whose idempotency layer reads, then inserts its claim — with a gap
between the two. Here to be caught by ``failover-harness explore --through postgresql://…``.

    python examples/pg_claim_service.py --port 8813 --postgresql postgresql://user@host/db
    python examples/pg_claim_service.py --port 8813 --postgresql … --correct      # the twin

Tables ``example_jobs`` (the side effect), ``example_responses`` and ``example_claims`` (created at
start). ``POST /jobs`` with ``Idempotency-Key``, every statement in autocommit:

1. ``SELECT … FROM example_responses``: a stored response is replayed (another body: 422);
2. ``INSERT INTO example_claims … ON CONFLICT DO NOTHING RETURNING``: no row → another request
   holds the key → ``409 request_in_progress``;
3. the handler inserts the job, then ``INSERT INTO example_responses`` and ``DELETE FROM
   example_claims`` (after a failure only the claim is deleted: the retry runs again).

The gap is between 1 and 2: a duplicate that read "no response" just before the first request
stored it, and inserts its claim just after the first deleted its own, runs the handler again
and answers 201 with a second job. ``--correct`` is the design without a gap: one transaction
per request whose first statement claims the key in ``example_responses`` itself (``INSERT … ON
CONFLICT DO NOTHING``). A duplicate's insert then *waits* inside PostgreSQL until the first
request commits (it sees the conflict and replays the stored response) or rolls back (it
inserts, and runs the handler itself).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from typing import Any

from jobs_app import (  # type: ignore[import-not-found]
    ASGIApp,
    Receive,
    Scope,
    Send,
    missing_extra,
    owner_of,
    respond,
    serve,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from through_kit import Create, in_progress, is_create, parser, read_create, replay  # type: ignore[import-not-found]

try:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # this example runs on the [postgres] extra
    missing_extra("postgres", exc)

SCHEMA = """
CREATE TABLE IF NOT EXISTS example_jobs (id TEXT PRIMARY KEY, owner TEXT NOT NULL,
    payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS example_responses (owner TEXT NOT NULL, key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, status INTEGER, body TEXT, PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS example_claims (owner TEXT NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (owner, key));
"""


class ClaimService:
    """The service: the idempotency layer and the handler share one connection per request."""

    def __init__(self, pool: AsyncConnectionPool, *, correct: bool = False,
                 work_ms: float = 20.0) -> None:
        self.pool = pool
        self.correct = correct
        self.work_ms = work_ms
        self.fail_next = False
        self.ready = asyncio.Event()
        self.opening: asyncio.Lock | None = None
        self.routes = Starlette(routes=[
            Route("/jobs/{job_id}", self.get_job, methods=["GET"]),
            Route("/_stats", self.stats, methods=["GET"]),
            Route("/_faults/fail-next", self.arm_fault, methods=["POST"]),
            Route("/healthz", self.healthz, methods=["GET"]),
        ])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.ready.is_set():
            await self._open()
        if not is_create(scope):
            await self.routes(scope, receive, send)
            return
        create = await read_create(scope, receive, send)
        if create is None:
            return
        async with self.pool.connection() as conn:
            if self.correct:
                await self._create_in_transaction(conn, create, send)
            else:
                await self._create_read_then_claim(conn, create, send)

    async def _open(self) -> None:
        """Open the pool (every connection at once: a request never waits for one, so it never
        starts because another request gave its connection back) and create the tables."""
        self.opening = self.opening or asyncio.Lock()
        async with self.opening:
            if not self.ready.is_set():
                await self.pool.open(wait=True)
                async with self.pool.connection() as conn:
                    await conn.execute(SCHEMA)
                self.ready.set()

    async def _create_read_then_claim(self, conn: AsyncConnection[Any], create: Create,
                                      send: Send) -> None:
        who = (create.owner, create.key)
        row = await (await conn.execute(  # 1. read
            "SELECT fingerprint, status, body FROM example_responses WHERE owner = %s AND "
            "key = %s", who)).fetchone()
        if row is not None:
            await replay(send, row[0], create.fingerprint, row[1], row[2].encode())
            return
        claimed = await (await conn.execute(  # 2. insert the claim
            "INSERT INTO example_claims (owner, key) VALUES (%s, %s) ON CONFLICT DO NOTHING "
            "RETURNING 1", who)).fetchone()
        if claimed is None:
            await in_progress(send)
            return
        try:
            status, content = await self._handle(conn, create)
            if status < 500:
                await conn.execute(
                    "INSERT INTO example_responses (owner, key, fingerprint, status, body) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (*who, create.fingerprint, status, content))
        finally:
            await conn.execute("DELETE FROM example_claims WHERE owner = %s AND key = %s", who)
        await respond(send, status, content.encode())

    async def _create_in_transaction(self, conn: AsyncConnection[Any], create: Create,
                                     send: Send) -> None:
        who = (create.owner, create.key)
        answer: tuple[Any, ...] | None = None
        try:
            async with conn.transaction():
                claimed = await (await conn.execute(  # waits while another request holds it
                    "INSERT INTO example_responses (owner, key, fingerprint) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING RETURNING 1", (*who, create.fingerprint))).fetchone()
                if claimed is None:
                    row = await (await conn.execute(
                        "SELECT fingerprint, status, body FROM example_responses WHERE "
                        "owner = %s AND key = %s", who)).fetchone()
                    answer = ("replay", *row) if row is not None else ("busy",)
                else:
                    status, content = await self._handle(conn, create)
                    if status >= 500:
                        raise _Failed(content)  # rolls the claim back: the retry runs again
                    await conn.execute(
                        "UPDATE example_responses SET status = %s, body = %s WHERE owner = %s "
                        "AND key = %s", (status, content, *who))
                    answer = ("created", status, content)
        except _Failed as failed:
            await respond(send, 500, failed.content.encode())
            return
        assert answer is not None
        if answer[0] == "replay":
            await replay(send, answer[1], create.fingerprint, answer[2], answer[3].encode())
        elif answer[0] == "busy":
            await in_progress(send)
        else:
            await respond(send, answer[1], answer[2].encode())

    async def _handle(self, conn: AsyncConnection[Any], create: Create) -> tuple[int, str]:
        """The handler: some work (a payment call, a queue push…), then a new job (the side
        effect), or the injected failure."""
        await asyncio.sleep(self.work_ms / 1000)
        if self.fail_next:
            self.fail_next = False
            return 500, json.dumps({"error": "handler_failed"})
        job_id = f"job_{uuid.uuid4().hex[:16]}"
        await conn.execute("INSERT INTO example_jobs (id, owner, payload) VALUES (%s, %s, %s)",
                           (job_id, create.owner, json.dumps(create.body)))
        return 201, json.dumps({"id": job_id, "status": "queued", "request": create.body})

    async def get_job(self, request: Request) -> Response:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT id, owner, payload FROM example_jobs WHERE id = %s",
                (request.path_params["job_id"],))).fetchone()
        if row is None or row[1] != owner_of(request.headers):
            return JSONResponse({"error": "not_found"}, 404)
        return JSONResponse({"id": row[0], "status": "queued", "request": json.loads(row[2])})

    async def stats(self, request: Request) -> Response:
        async with self.pool.connection() as conn:
            (count,) = await (await conn.execute("SELECT count(*) FROM example_jobs")).fetchone()
        return JSONResponse({"jobs": count})

    async def arm_fault(self, request: Request) -> Response:
        self.fail_next = True
        return Response(status_code=204)

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})


class _Failed(Exception):
    def __init__(self, content: str) -> None:
        super().__init__("handler failed")
        self.content = content


def build(args: argparse.Namespace) -> ASGIApp:
    pool = AsyncConnectionPool(args.postgresql, min_size=16, max_size=16, open=False,
                               kwargs={"autocommit": True})
    return ClaimService(pool, correct=args.correct, work_ms=args.work_ms)


if __name__ == "__main__":
    serve(build, parser("A jobs service on PostgreSQL (read-then-insert gap; --correct: the "
                        "twin).", "postgresql", "postgresql://postgres@127.0.0.1:5432/postgres"))
