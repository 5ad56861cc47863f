"""A flawed twin of correct_service.py: the official ``openai`` SDK's default retries re-send a
timed-out call, so one job costs up to 3 billed primary calls, then the fallback's.

Everything else is right (UNIQUE (owner, key), a timeout leaves the job ``running``, a
compare-and-swap claim). The worker calls the primary with ``openai.OpenAI(timeout=…)`` and no
``max_retries``: the SDK's default is 2 retries, on timeouts and connection errors too, so a
provider that hangs (or answers late, or resets) is asked 3 times, each one billed, before the
worker falls back to the Anthropic fallback. The bug people report: "SDK retries re-send a
timed-out call". A timed-out call is not over: the provider may still be generating (and
billing), so each retry is a new attempt while the first one's outcome is unknown. Broken rule:
an unknown outcome blocks new attempts (``within_hedge``); with a budget of 2 billed calls
(``sdk-retries.profile.yaml``) the bill too, while ``sdk-retry-unresolved.profile.yaml``
declares the bill the retries cost (4), so only the first rule is left to break. The fix is one
argument: ``max_retries=0`` (and a hedge you count yourself).

Run: ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9002
python examples/drill/sdk_retries_service.py --port 8901 --timeout 0.5``.
"""

from __future__ import annotations

import threading
from typing import Any

import jobkit
import llm
import openai


class RetryingWorker:
    def __init__(self, store: jobkit.Store, timeout: float, max_retries: int) -> None:
        self.store = store
        # THE BUG: the SDK's default retries (2) re-send a timed-out call.
        self.primary = openai.OpenAI(base_url=jobkit.openai_base_url(),
                                     api_key=jobkit.api_key("OPENAI_API_KEY"), timeout=timeout,
                                     max_retries=max_retries)
        self.fallback = llm.anthropic_client(timeout)

    def start(self, job: dict[str, Any]) -> None:
        threading.Thread(target=self.run, args=(job,), daemon=True).start()

    def run(self, job: dict[str, Any]) -> None:
        prompt = job["text"]
        llm.in_turn(self.store, job, [
            ("openai", lambda: llm.ask_openai(self.primary, prompt)),
            ("anthropic", lambda: llm.ask_anthropic(self.fallback, prompt))])


def main() -> None:
    args = jobkit.arguments(__doc__, max_retries=(int, openai.DEFAULT_MAX_RETRIES,
                                                  "the SDK's retries (default: the SDK's own)"))
    store = jobkit.store_of(args)
    worker = RetryingWorker(store, args.timeout, args.max_retries)
    jobkit.serve_stdlib(store, worker.start, args.host, args.port)


if __name__ == "__main__":
    main()
