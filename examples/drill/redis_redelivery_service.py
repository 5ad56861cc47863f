"""A flawed twin of correct_service.py: a Redis work queue redelivers a job that is still
running, and the second run writes its answer over the first, after the job was complete.

The queue of redis_queue_service.py (a real Redis, ``--redis URL``: a list, a processing list,
leases of ``--visibility`` seconds; a reaper delivers a job again when its lease expired), with
Celery's ``acks_late``: a worker acknowledges a job only when its task returns. The task asks
the primary (plain httpx, ``--timeout``), on a timeout or a failure the fallback, and saves the
answer as the job's result with a plain ``UPDATE`` (``job.result = …; job.save()``): right for a
job run once. Then it does ``--followup`` seconds of follow-up work (a webhook, an index update)
before it returns. The follow-up outlasts the visibility timeout, so the job is delivered again
while its first run is still in its follow-up: the second run asks the provider again and
writes its answer over the result the user has already seen, ``--visibility`` seconds after the
job started. (A job is delivered at most ``--max-deliveries`` times, SQS's ``maxReceiveCount``,
so each job is re-run exactly once, whatever the load.) The bug people report: "Celery
redelivers a long task and its result changes". Broken rule: the late result never overwrites
(``one_winner``). Where the primary hangs the re-run also calls it again, beyond the hedge and
the bill.

Run (a real Redis): ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1
ANTHROPIC_BASE_URL=http://127.0.0.1:9002 python examples/drill/redis_redelivery_service.py
--port 8906 --timeout 0.5 --redis redis://127.0.0.1:6379/0`` (tests pass a shorter
``--visibility`` and ``--followup``).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import jobkit
import llm
import redis_queue_service
from redis_queue_service import RedisQueue


class AcksLateWorker:
    def __init__(self, store: jobkit.Store, work: RedisQueue, timeout: float,
                 followup: float) -> None:
        self.store, self.work, self.followup = store, work, followup
        self.http = httpx.Client(timeout=timeout, verify=llm.TLS)

    def forever(self) -> None:
        while True:
            job_id = self.work.take()
            if job_id is None:
                continue
            job = self.store.job(job_id)
            if job is not None:
                self.run(job)
            self.work.ack(job_id)  # acks_late: only once the task returned

    def run(self, job: dict[str, Any]) -> None:
        prompt = job["text"]
        llm.in_turn(self.store, job, [  # THE BUG (with the redelivery): a plain overwrite
            ("openai", lambda: llm.wire_openai(self.http, prompt)),
            ("anthropic", lambda: llm.wire_anthropic(self.http, prompt))], overwrite=True)
        time.sleep(self.followup)  # the task's follow-up work, longer than the visibility


def main() -> None:
    args = jobkit.arguments(__doc__, redis=(str, "redis://127.0.0.1:6379/0", "Redis URL"),
                            visibility=(float, 2.0, "seconds a delivery is leased"),
                            followup=(float, 0.0, "seconds of follow-up work after the result "
                                      "is saved (default 1.5 x visibility: THE BUG)"),
                            max_deliveries=(int, 2, "deliveries of a job at most"),
                            workers=(int, 128, "worker threads (each job holds one for its "
                                     "follow-up too)"))
    followup = args.followup or 1.5 * args.visibility
    redis_queue_service.serve(
        args, args.visibility, args.max_deliveries,
        lambda store, work: AcksLateWorker(store, work, args.timeout, followup).forever)


if __name__ == "__main__":
    main()
