"""A jobs service whose idempotency middleware keeps its state in Redis — with a check-then-lock
gap. It is here to be caught by ``failover-harness explore --through redis://…``.

    python examples/redis_lock_service.py --port 8811 --redis redis://127.0.0.1:6379/0
    python examples/redis_lock_service.py --port 8811 --redis … --correct      # the twin

``POST /jobs`` with ``Idempotency-Key``, keys ``idem:<owner>:<key>:…``:

1. ``GET …:response``: a stored response is replayed (``Idempotent-Replayed: true``; another
   body under the key is 422);
2. ``SET …:lock 1 NX PX 30000``: taken by another request → ``409 request_in_progress``;
3. the handler runs (a row in SQLite: the side effect), then ``SET …:response`` and
   ``DEL …:lock`` (after a 5xx only the lock is deleted: the retry runs again).

The gap is between 1 and 2. A duplicate that read "no response" just *before* the first request
stored its response, and takes the lock just *after* the first released it, runs the handler
a second time and answers 201 with a second job. Under free-running load that needs the
duplicate's two round trips to straddle the first request's last two: a few bursts in a hundred
at best. ``--correct`` reads the response again once it holds the lock (double-checked) and
replays what it finds: the same service without the gap.
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


class RedisLockMiddleware(CreateMiddleware):  # type: ignore[misc]
    """Idempotency-Key on ``POST /jobs`` with Redis, as described in the module docstring."""

    @property
    def redis(self) -> redis.Redis:
        return self.store  # type: ignore[no-any-return]

    async def create(self, create: Create, scope: Scope, send: Send) -> None:
        base = f"idem:{create.owner}:{create.key}"
        stored = await self.redis.get(f"{base}:response")  # 1. check
        if stored is not None:
            await self._replay(send, stored, create.fingerprint)
            return
        if not await self.redis.set(f"{base}:lock", b"1", nx=True, px=LOCK_MS):  # 2. lock
            await in_progress(send)
            return
        if self.correct:  # the twin: check again now that the lock is ours
            stored = await self.redis.get(f"{base}:response")
            if stored is not None:
                await self.redis.delete(f"{base}:lock")
                await self._replay(send, stored, create.fingerprint)
                return
        try:
            status, headers, content = await call_app(self.app, scope, create.raw)
            if status < 500:
                await self.redis.set(f"{base}:response", json.dumps(
                    {"fingerprint": create.fingerprint, "status": status,
                     "body": content.decode()}))
        finally:
            await self.redis.delete(f"{base}:lock")
        await forward(send, status, headers, content)

    @staticmethod
    async def _replay(send: Send, stored: bytes, fp: str) -> None:
        record = json.loads(stored)
        await replay(send, record["fingerprint"], fp, record["status"], record["body"].encode())


def build(args: argparse.Namespace) -> ASGIApp:
    app = jobs_app(open_db(args.db), work_ms=args.work_ms, fail_file=args.fail_file)
    return RedisLockMiddleware(app, redis.Redis.from_url(args.redis), correct=args.correct)


if __name__ == "__main__":
    serve(build, parser("A jobs service with a Redis idempotency middleware (check-then-lock "
                        "gap; --correct: the twin).", "redis", "redis://127.0.0.1:6379/0"))
