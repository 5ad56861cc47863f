"""A flawed twin of correct_service.py: a Redis work queue whose visibility timeout is shorter
than the provider timeout, so it redelivers a job whose worker is still running.

The API puts each new job's id on a Redis list; ``--workers`` threads take ids with ``BLMOVE``
into a processing list and lease them for ``--visibility`` seconds (a sorted set of deadlines);
a reaper puts every id whose lease expired back on the queue (and so does an ack that comes
after the lease ran out), the at-least-once delivery of Celery's or RQ's Redis brokers. A worker
calls the primary with plain httpx (``--timeout``), on a timeout or a failure the fallback, and
claims the result with a compare-and-swap, so one winner holds and a late claim is recorded as a
race. But ``--visibility`` (default 0.6 x timeout) is shorter than ``--timeout``: while the
first worker still waits for a silent provider, the job is delivered again and a second worker
calls the primary again. The bug people report: "a queue redelivers a job whose worker is still
running". Broken promises: no attempt beyond the declared hedge (none), billed calls per intent
(declared at most 2).

Run (a real Redis): ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1
ANTHROPIC_BASE_URL=http://127.0.0.1:9002 python examples/drill/redis_queue_service.py
--port 8904 --timeout 0.5 --redis redis://127.0.0.1:6379/0``.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import jobkit
import llm
import redis


class RedisQueue:
    """At-least-once delivery: a list, a processing list, leases in a sorted set. A job whose
    lease expired is delivered again, up to ``max_deliveries`` times (0: no limit; SQS's
    ``maxReceiveCount``), then it is put on the dead-letter list."""

    def __init__(self, url: str, visibility: float, max_deliveries: int = 0, *,
                 connections: int = 64) -> None:
        # a blocking pool: at its limit a command waits for a free connection (every worker
        # holds one while it blocks in BLMOVE) instead of failing with "Too many connections"
        # (a submit's LPUSH failed so under 36 intents at once on a loaded machine)
        pool = redis.BlockingConnectionPool.from_url(url, decode_responses=True,
                                                     max_connections=connections, timeout=30)
        self.redis = redis.Redis(connection_pool=pool)
        self.redis.ping()
        prefix = f"drill-example:{uuid.uuid4().hex[:8]}"
        self.queue, self.processing, self.leases, self.deliveries, self.dead = (
            f"{prefix}:queue", f"{prefix}:processing", f"{prefix}:leases",
            f"{prefix}:deliveries", f"{prefix}:dead")
        self.visibility, self.max_deliveries = visibility, max_deliveries

    def put(self, job_id: str) -> None:
        self.redis.lpush(self.queue, job_id)

    def take(self) -> str | None:
        taken = self.redis.blmove(self.queue, self.processing, 1, "RIGHT", "LEFT")
        if taken is None:
            return None
        job_id = str(taken)  # decode_responses: always a str
        self.redis.zadd(self.leases, {job_id: time.time() + self.visibility})
        self.redis.hincrby(self.deliveries, job_id, 1)
        return job_id

    def ack(self, job_id: str) -> None:
        """Done with ``job_id``; if its lease ran out first, it is due again (as with SQS, the
        lease decides, not when the reaper last looked: a busy reaper may not have seen it)."""
        lease = self.redis.zscore(self.leases, job_id)  # None: the reaper took it already
        if self.redis.zrem(self.leases, job_id) and lease is not None and lease <= time.time():
            self._expired(job_id)
        else:
            self.redis.lrem(self.processing, 1, job_id)

    def reap_forever(self) -> None:
        """Redeliver every job whose lease expired (its worker may still be running)."""
        while True:
            for job_id in map(str, self.redis.zrangebyscore(self.leases, 0, time.time())):
                if self.redis.zrem(self.leases, job_id):  # (the ack's or the reaper's, once)
                    self._expired(job_id)
            time.sleep(self.visibility / 10)  # the reaper's tick

    def _expired(self, job_id: str) -> None:
        """A delivery whose lease ran out: the job goes back on the queue, or after
        ``max_deliveries`` deliveries to the dead-letter list."""
        self.redis.lrem(self.processing, 1, job_id)
        delivered = int(self.redis.hget(self.deliveries, job_id) or 0)
        if self.max_deliveries and delivered >= self.max_deliveries:
            self.redis.lpush(self.dead, job_id)
        else:
            self.put(job_id)


class QueueWorker:
    def __init__(self, store: jobkit.Store, work: RedisQueue, timeout: float) -> None:
        self.store, self.work = store, work
        self.http = httpx.Client(timeout=timeout, verify=llm.TLS)

    def forever(self) -> None:
        while True:
            job_id = self.work.take()
            if job_id is None:
                continue
            job = self.store.job(job_id)
            if job is not None and not self.store.is_complete(job_id):
                self.run(job)
            self.work.ack(job_id)

    def run(self, job: dict[str, Any]) -> None:
        prompt = job["text"]
        llm.in_turn(self.store, job, [
            ("openai", lambda: llm.wire_openai(self.http, prompt)),
            ("anthropic", lambda: llm.wire_anthropic(self.http, prompt))])


def serve(args: argparse.Namespace, visibility: float, max_deliveries: int,
          worker: Callable[[jobkit.Store, RedisQueue], Callable[[], None]]) -> None:
    """The API, ``args.workers`` threads each running ``worker(store, queue)``, the reaper."""
    store = jobkit.store_of(args)
    try:
        # a connection per worker (each blocks in BLMOVE), the reaper's and the API's
        work = RedisQueue(args.redis, visibility, max_deliveries, connections=args.workers + 16)
    except redis.RedisError as exc:
        jobkit.fail(f"--redis {args.redis}: {exc}; fix: start redis-server or pass its URL")
    for _ in range(args.workers):
        threading.Thread(target=worker(store, work), daemon=True).start()
    threading.Thread(target=work.reap_forever, daemon=True).start()
    jobkit.serve_stdlib(store, lambda job: work.put(job["id"]), args.host, args.port)


def main() -> None:
    args = jobkit.arguments(__doc__, redis=(str, "redis://127.0.0.1:6379/0", "Redis URL"),
                            visibility=(float, 0.0, "seconds a delivery is leased "
                                        "(default 0.6 x timeout: THE BUG)"),
                            workers=(int, 32, "worker threads"))
    serve(args, args.visibility or 0.6 * args.timeout, 0,
          lambda store, work: QueueWorker(store, work, args.timeout).forever)


if __name__ == "__main__":
    main()
