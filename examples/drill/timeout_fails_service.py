"""A flawed twin of correct_service.py: a timeout marks the job failed, and the late primary
overwrites the fallback's result.

Plain httpx on the wire (no SDK). The worker waits ``--timeout`` seconds for the primary; then
it marks the job ``failed`` ("provider timed out") and its retry loop re-runs the failed job on
the fallback ``--retry-delay`` seconds later (a primary that errs in time is replaced by the
fallback at once, without the detour). The primary's request is not cancelled (its HTTP
client allows ``--abandon-after``, 3 x timeout by default), and every answer is written with a
plain ``UPDATE`` (no compare-and-swap on the version). The bugs people report: a timeout taken
for a failure (the user is told "failed" while the provider is still working, and the job is
re-run); a late answer overwrites the one the user already saw. Broken promises: a timeout is
not a failure; one winner.

Run: ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9002
python examples/drill/timeout_fails_service.py --port 8902 --timeout 0.5``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import jobkit
import llm


class FailingWorker:
    def __init__(self, store: jobkit.Store, timeout: float, abandon_after: float,
                 retry_delay: float) -> None:
        self.store, self.timeout, self.retry_delay = store, timeout, retry_delay
        self.http = httpx.Client(timeout=abandon_after)

    def start(self, job: dict[str, Any]) -> None:
        threading.Thread(target=self.run, args=(job,), daemon=True).start()

    def run(self, job: dict[str, Any]) -> None:
        prompt = job["text"]
        attempt = self.store.start_attempt(job["id"], "openai")
        ended = threading.Event()

        def primary() -> None:
            try:
                text = llm.wire_openai(self.http, prompt)
                self.store.write_result(attempt, text)  # THE BUG
            except (llm.Failed, llm.Unknown) as exc:
                self.store.end_attempt(attempt, "failed", str(exc))
            finally:
                ended.set()

        threading.Thread(target=primary, daemon=True).start()
        if ended.wait(self.timeout):  # an answer, or an error: the fallback at once if needed
            if not self.store.is_complete(job["id"]):
                self.retry(job, prompt)
            return
        # THE BUG: no answer in time is taken for a failure, and the job is re-run
        self.store.set_status(job["id"], "failed", f"provider timed out after {self.timeout} s")
        time.sleep(self.retry_delay)  # the retry loop's delay
        self.retry(job, prompt)

    def retry(self, job: dict[str, Any], prompt: str) -> None:
        attempt = self.store.start_attempt(job["id"], "anthropic")
        try:
            text = llm.wire_anthropic(self.http, prompt)
        except (llm.Failed, llm.Unknown) as exc:
            self.store.end_attempt(attempt, "failed", str(exc))
            return
        self.store.write_result(attempt, text)


def main() -> None:
    args = jobkit.arguments(__doc__, abandon_after=(float, 0.0, "seconds before the primary "
                                                    "call is abandoned (default 3 x timeout)"),
                            retry_delay=(float, 0.1, "seconds before a failed job is re-run"))
    store = jobkit.store_of(args)
    worker = FailingWorker(store, args.timeout, args.abandon_after or 3 * args.timeout,
                           args.retry_delay)
    jobkit.serve_stdlib(store, worker.start, args.host, args.port)


if __name__ == "__main__":
    main()
