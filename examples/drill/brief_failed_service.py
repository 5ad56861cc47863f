"""A flawed twin of correct_service.py: when the primary times out, the job is shown ``failed``
until the fallback answers.

Everything else is the correct service's (jobkit.py's API, UNIQUE (owner, key), the official
``openai`` and ``anthropic`` SDKs with ``max_retries=0``, one hedge, a compare-and-swap claim:
the late primary's answer is dropped and recorded in ``/races``). But when the primary has not
answered after ``--timeout`` seconds the worker writes ``status: failed`` ("the primary timed
out") and then asks the fallback at once; the fallback's answer makes the job ``succeeded``. So
``failed`` is shown only for the fallback's round trip, a few milliseconds when it answers at
once: a user (or a poller) who looks then is told the job failed while the primary may still be
generating, and billing. The bug people report: "the status flips to failed and back". Broken
rule: a timeout is not a failure (only it: the answer, the bill and the winner are right).

Run: ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9002
python examples/drill/brief_failed_service.py --port 8905 --timeout 0.5``.
"""

from __future__ import annotations

from typing import Any

import correct_service
import jobkit


class FailingBriefly(correct_service.HedgedWorker):
    def timed_out(self, job: dict[str, Any], attempt: jobkit.Attempt) -> None:
        super().timed_out(job, attempt)
        # THE BUG: no answer in time is shown as a failure, until the fallback's answer lands
        self.store.set_status(job["id"], "failed", f"the primary timed out after {self.timeout} s")


if __name__ == "__main__":
    correct_service.main(FailingBriefly, __doc__)
