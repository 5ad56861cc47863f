"""A correct LLM job service: one job per key, a timeout is not a failure, one bounded hedge,
one winner.

- ``POST /jobs`` (``{"text": …}``, ``Idempotency-Key``, ``X-Owner``; the API is jobkit.py's)
  inserts the job with one statement under a UNIQUE (owner, key) in SQLite; a duplicate (the
  same body) gets the same job and starts no second worker; another body under the key is 409.
- The worker streams the input's text to the primary with the official ``openai`` SDK
  (``OPENAI_BASE_URL``, ``max_retries=0``). If the primary has not answered after ``--timeout``
  seconds, its attempt becomes *unknown* (never failed: the job stays ``running``) and ONE hedge
  starts at the fallback with the official ``anthropic`` SDK (``ANTHROPIC_BASE_URL``). A primary
  that failed for sure (refused, 5xx, never sent) is replaced by the fallback at once; one whose
  outcome is unknown (reset, cut stream) only when the hedge delay has passed. At most 2 provider
  calls per job, so at most 2 billed.
- Each finished attempt claims the result with a compare-and-swap on the job's version; the loser
  (typically the primary's late answer) is discarded and recorded in ``GET /jobs/{id}/races``.
  A cut stream is never a result.
- The primary call is abandoned after ``--abandon-after`` seconds (default 3 x timeout).

``--defect`` makes it a twin that breaks one API rule (jobkit.py): ``check-then-insert``,
``owner-blind``, ``replay-other-body``, ``refuse-creates``.

Run: ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9002
python examples/drill/correct_service.py --port 8900 --timeout 0.5`` (prints ``listening on …``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import jobkit
import llm


class HedgedWorker:
    """Primary now, the fallback after the hedge delay (or at once after a sure failure)."""

    def __init__(self, store: jobkit.Store, timeout: float, abandon_after: float,
                 stream: bool) -> None:
        self.store, self.timeout, self.stream = store, timeout, stream
        self.primary = llm.openai_client(abandon_after)
        self.fallback = llm.anthropic_client(abandon_after)

    def start(self, job: dict[str, Any]) -> None:
        threading.Thread(target=self.run, args=(job,), daemon=True).start()

    def run(self, job: dict[str, Any]) -> None:
        prompt, began = job["text"], time.monotonic()
        attempt = self.store.start_attempt(job["id"], "openai")
        ended, failed = threading.Event(), threading.Event()

        def primary() -> None:
            try:
                text = llm.ask_openai(self.primary, prompt, stream=self.stream)
                self.store.claim(attempt, text)
            except llm.Failed as exc:
                self.store.end_attempt(attempt, "failed", str(exc))
                failed.set()
            except llm.Unknown as exc:
                self.store.end_attempt(attempt, "unknown", str(exc))
            finally:
                ended.set()

        threading.Thread(target=primary, daemon=True).start()
        ended.wait(self.timeout)
        if not failed.is_set() and not self.store.is_complete(job["id"]):
            # open or unknown: the hedge waits for its delay, counted from the primary's start
            if not ended.is_set():
                self.timed_out(job, attempt)
            time.sleep(max(0.0, self.timeout - (time.monotonic() - began)))  # the hedge delay
        if self.store.is_complete(job["id"]):
            return
        self.hedge(job, prompt, failed)

    def timed_out(self, job: dict[str, Any], attempt: jobkit.Attempt) -> None:
        """The primary did not answer in time: its outcome is unknown, the job stays running."""
        self.store.end_attempt(attempt, "unknown", f"no answer in {self.timeout} s")

    def hedge(self, job: dict[str, Any], prompt: str, primary_failed: threading.Event) -> None:
        attempt = self.store.start_attempt_if_open(job["id"], "anthropic")
        if attempt is None:  # the primary's answer won meanwhile: no call after completion
            return
        try:
            text = llm.ask_anthropic(self.fallback, prompt)
        except llm.Failed as exc:
            self.store.end_attempt(attempt, "failed", str(exc))
            if primary_failed.is_set():  # both refused: nothing is pending, the job failed
                self.store.set_status(job["id"], "failed", "every provider refused")
            return
        except llm.Unknown as exc:
            self.store.end_attempt(attempt, "unknown", str(exc))
            return
        self.store.claim(attempt, text)


def main(worker: type[HedgedWorker] = HedgedWorker, doc: str | None = __doc__) -> None:
    """Serve the API with ``worker`` (a twin passes its own subclass and docstring)."""
    args = jobkit.arguments(doc, abandon_after=(float, 0.0, "seconds before the primary "
                                                "call is abandoned (default 3 x timeout)"),
                            stream=(str, "yes", "stream from the primary: yes | no"))
    store = jobkit.store_of(args)
    hedged = worker(store, args.timeout, args.abandon_after or 3 * args.timeout,
                    args.stream != "no")
    jobkit.serve_stdlib(store, hedged.start, args.host, args.port)


if __name__ == "__main__":
    main()
