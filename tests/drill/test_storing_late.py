"""A provider's answer that reaches the service near the end of the drill's budget: the drill
looks on for ``settle_s`` after it, so that a service a loaded machine slowed while it stored
the answer is not said to have lost it (a false alarm the project's CI once raised on the
correct example), while one that never stores it still breaks ``completed``. Called through
the entry point, against a small jobs service on loopback that calls its provider late on
purpose."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from harness.drill.entry import DrillOutcome, DrillSettings, drill
from harness.drill.findings import IntentVerdict
from harness.target.drill_profile import DrillProfile
from tests._servers import JsonHandler, free_port, tls
from tests.drill.conftest import jobs_profile

PROVIDER_S, JOB_S, SETTLE_S = 0.2, 0.5, 3.0
#: the drill's budget from the submit's answer: job_s + the late primary's delay
#: (provider_s + 1 s) + 1 s (harness/drill/engine.py, Engine.budget): 2.7 s
BUDGET_S = JOB_S + (PROVIDER_S + 1.0) + 1.0
CALL_AT_S = BUDGET_S - 1.0  # the worker asks its provider 1 s before the budget runs out
STORE_AFTER_S = 2.0  # ... and stores the answer 2 s after it came: 1 s past the budget


class LateJobs:
    """One job per key; its worker waits ``CALL_AT_S``, asks the primary, then stores the
    answer ``store_after`` seconds later (None: never)."""

    def __init__(self, primary: str, store_after: float | None) -> None:
        self.primary, self.store_after = primary, store_after
        self.jobs: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        service = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                text = json.loads(self.rfile.read(int(self.headers["content-length"])))["text"]
                key = self.headers["Idempotency-Key"]
                with service.lock:
                    job = service.jobs.setdefault(key, {"id": key, "status": "running",
                                                        "result": None})
                threading.Thread(target=service.work, args=(key, text), daemon=True).start()
                self.send_json(201, job)

            def do_GET(self) -> None:
                with service.lock:
                    job = service.jobs.get(self.path.rsplit("/", 1)[-1])
                    self.send_json(200 if job else 404, dict(job) if job else {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def work(self, key: str, text: str) -> None:
        # the service's own pace (what is drilled), not a wait of the test's: it ends at stop
        if self.stop.wait(CALL_AT_S):
            return
        answer = httpx.post(f"{self.primary}/v1/chat/completions", verify=tls(), timeout=5,
                            json={"model": "m", "messages": [{"role": "user", "content": text}]},
                            headers={"Authorization": "Bearer k"}).json()
        if self.store_after is None or self.stop.wait(self.store_after):
            return
        with self.lock:
            self.jobs[key].update(status="succeeded",
                                  result={"text": answer["choices"][0]["message"]["content"]})


def _profile(primary: int, fallback: int) -> DrillProfile:
    return jobs_profile("late-store", primary, fallback,
                        {"provider_s": PROVIDER_S, "job_s": JOB_S, "settle_s": SETTLE_S})


@pytest.fixture
def late(request: pytest.FixtureRequest) -> Iterator[tuple[LateJobs, int, int]]:
    primary, fallback = free_port(), free_port()
    service = LateJobs(f"http://127.0.0.1:{primary}", request.param)
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service, primary, fallback
    service.stop.set()
    service.server.shutdown()
    service.server.server_close()
    thread.join(timeout=10)


def _drilled(late: tuple[LateJobs, int, int]) -> tuple[DrillOutcome, IntentVerdict, float]:
    """One control intent against the service: the outcome, its verdict, when the primary's
    answer went."""
    service, primary, fallback = late
    outcome = drill(DrillSettings(profile=_profile(primary, fallback), target=service.url,
                                  env={}, drills=("control",), trials=1, probe=False))
    [verdict] = outcome.results.verdicts["control"]
    answered = next(c.ended_at for c in verdict.evidence.calls if c.outcome == "answered")
    assert answered is not None
    return outcome, verdict, answered


@pytest.mark.parametrize("late", [STORE_AFTER_S], indirect=True)
def test_an_answer_stored_after_the_budget_ran_out_is_waited_for(
        late: tuple[LateJobs, int, int]) -> None:
    outcome, verdict, _ = _drilled(late)
    ev = verdict.evidence
    asked = next(c.at for c in ev.calls if c.outcome == "answered")
    first = next(o for o in ev.observations if o.status == "succeeded")
    # the budget ran out between the answer and the job showing it (the path under test)
    assert "the job did not finish within the drill's budget" in ev.note, ev.note
    # the look that showed the job complete came back after the late store, which was at least
    # STORE_AFTER_S after the call reached the provider: an order of events, not a timing (the
    # look's asking time may precede the store it reports when a loaded service queues it, and
    # the fake stamps a call's end only once its loop runs again; at is rounded to 0.1 ms)
    assert first.answered_at is not None and first.answered_at >= asked + STORE_AFTER_S - 1e-4, ev
    assert "showed complete" in ev.note, ev.note
    assert verdict.of("completed").verdict == "held"  # type: ignore[union-attr]
    assert outcome.verdict == "pass", [f for f in verdict.findings if f.verdict != "held"]


@pytest.mark.parametrize("late", [None], indirect=True)
def test_an_answer_never_stored_still_breaks_completed(late: tuple[LateJobs, int, int]) -> None:
    outcome, verdict, answered = _drilled(late)
    ev = verdict.evidence
    # the drill looked on for settle_s after the answer before it judged
    assert ev.observations[-1].at >= answered + SETTLE_S, (answered, ev.observations[-1])
    completed = verdict.of("completed")
    assert completed is not None and completed.verdict == "broken", verdict.findings
    assert "the service stored it late or not at all" in completed.message
    assert outcome.verdict == "fail"
