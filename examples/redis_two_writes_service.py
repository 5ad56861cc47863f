"""A jobs service whose Redis idempotency middleware stores a response as two writes and reads it
back as two reads — so a duplicate can read half of it. Here to be caught by
``failover-harness explore --through redis://…``.

    python examples/redis_two_writes_service.py --port 8812 --redis redis://127.0.0.1:6379/0
    python examples/redis_two_writes_service.py --port 8812 --redis … --correct      # the twin

``POST /jobs`` with ``Idempotency-Key``, keys ``idem:<owner>:<key>:…``:

1. ``GET …:meta`` (fingerprint and status); when present, ``GET …:body`` and replay both;
2. ``SET …:lock 1 NX PX 30000`` (taken → ``409 request_in_progress``), then ``GET …:meta`` again
   (a response stored meanwhile is replayed: no check-then-lock gap here);
3. the handler runs, then ``SET …:meta`` and ``SET …:body`` — two writes — and ``DEL …:lock``.

A duplicate whose ``GET …:meta`` lands between the two writes finds the status but no body yet:
``json.loads(None)`` raises and it answers 500 for a request that was already served. The window
is one Redis round trip wide: free-running bursts hit it about once in fifty when timed around
the first request's end. ``--correct`` writes both in one ``MULTI``/``EXEC`` and reads both with
one ``MGET``: a reader sees all of the response or none of it.
"""

from __future__ import annotations

import argparse
import json

from jobs_app import ASGIApp, Scope, Send, call_app, jobs_app, missing_extra, open_db, serve  # type: ignore[import-not-found]
from through_kit import Create, CreateMiddleware, forward, in_progress, parser, replay  # type: ignore[import-not-found]

try:
    import redis.asyncio as redis
except ImportError as exc:  # the Redis examples run on the [explore] extra
    missing_extra("explore", exc)

LOCK_MS = 30_000


class TwoWritesMiddleware(CreateMiddleware):  # type: ignore[misc]
    """Idempotency-Key on ``POST /jobs`` with Redis, as described in the module docstring."""

    @property
    def redis(self) -> redis.Redis:
        return self.store  # type: ignore[no-any-return]

    async def _stored(self, base: str) -> tuple[dict[str, object], bytes] | None:
        if self.correct:  # one read for both halves
            meta, body = await self.redis.mget(f"{base}:meta", f"{base}:body")
        else:
            meta = await self.redis.get(f"{base}:meta")
            body = await self.redis.get(f"{base}:body") if meta is not None else None
        if meta is None:
            return None
        return json.loads(meta), json.loads(body)["content"].encode()  # None: TypeError → 500

    async def _store(self, base: str, meta: dict[str, object], content: bytes) -> None:
        body = json.dumps({"content": content.decode()})
        if self.correct:  # one transaction for both halves
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.set(f"{base}:meta", json.dumps(meta))
                pipe.set(f"{base}:body", body)
                await pipe.execute()
        else:
            await self.redis.set(f"{base}:meta", json.dumps(meta))
            await self.redis.set(f"{base}:body", body)

    async def create(self, create: Create, scope: Scope, send: Send) -> None:
        base = f"idem:{create.owner}:{create.key}"
        stored = await self._stored(base)
        if stored is None:
            if not await self.redis.set(f"{base}:lock", b"1", nx=True, px=LOCK_MS):
                await in_progress(send)
                return
            stored = await self._stored(base)
            if stored is not None:
                await self.redis.delete(f"{base}:lock")
        if stored is not None:
            meta, content = stored
            await replay(send, str(meta["fingerprint"]), create.fingerprint, int(meta["status"]),  # type: ignore[call-overload]
                         content)
            return
        try:
            status, headers, content = await call_app(self.app, scope, create.raw)
            if status < 500:
                await self._store(base, {"fingerprint": create.fingerprint, "status": status},
                                  content)
        finally:
            await self.redis.delete(f"{base}:lock")
        await forward(send, status, headers, content)


def build(args: argparse.Namespace) -> ASGIApp:
    app = jobs_app(open_db(args.db), work_ms=args.work_ms, fail_file=args.fail_file)
    return TwoWritesMiddleware(app, redis.Redis.from_url(args.redis), correct=args.correct)


if __name__ == "__main__":
    serve(build, parser("A jobs service with a Redis idempotency middleware (a response stored "
                        "as two writes; --correct: the twin).", "redis", "redis://127.0.0.1:6379/0"))
