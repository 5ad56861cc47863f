"""How the drill clicks: a double click's two submits are in flight at the same instant (a
service that answers a submit only while the other one is in flight sees both); a re-click
comes after the service's timeout, while the primary's call is unresolved. Called through the
entry point, against a small jobs service on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from harness.drill.entry import DrillSettings, drill
from harness.target.drill_profile import DrillProfile
from tests._servers import JsonHandler, free_port, tls
from tests.drill.conftest import LOAD_MISSES, ROOT, jobs_profile, load_caused

#: the example drills run one at a time on one worker: each brings its own load (36
#: intents at once), and two at once on two cores judged timing, not the service
pytestmark = pytest.mark.one_worker("drill-examples")

TIMEOUT_S = 0.5  # the service's provider timeout


class Jobs:
    """One job per key. A submit is answered only once a second submit of the same key is in
    flight too (a barrier, 3 s): two submits sent one after the other are refused (409). The
    worker asks the primary (``TIMEOUT_S``), then the fallback."""

    def __init__(self, primary: str, fallback: str, together: bool) -> None:
        self.primary, self.fallback, self.together = primary, fallback, together
        self.jobs: dict[str, dict[str, Any]] = {}
        self.barriers: dict[str, threading.Barrier] = {}
        self.lock = threading.Lock()
        service = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                text = json.loads(self.rfile.read(int(self.headers["content-length"])))["text"]
                status, job = service.create(self.headers["Idempotency-Key"], text)
                self.send_json(status, job)

            def do_GET(self) -> None:
                with service.lock:
                    job = service.jobs.get(self.path.rsplit("/", 1)[-1])
                self.send_json(200 if job else 404, job or {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def create(self, key: str, text: str) -> tuple[int, dict[str, Any]]:
        if self.together:
            with self.lock:
                barrier = self.barriers.setdefault(key, threading.Barrier(2, timeout=3))
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return 409, {"error": "the other click was not in flight"}
        with self.lock:
            if key in self.jobs:
                return 200, self.jobs[key]
            job = self.jobs[key] = {"id": key, "status": "running", "result": None}
        threading.Thread(target=self.work, args=(key, text), daemon=True).start()
        return 201, job

    def work(self, key: str, text: str) -> None:
        messages = [{"role": "user", "content": text}]
        # the primary hangs: at the timeout, the fallback (the declared hedge)
        with httpx.Client(timeout=TIMEOUT_S, verify=tls()) as http, \
                contextlib.suppress(httpx.HTTPError):
            http.post(f"{self.primary}/v1/chat/completions", json={
                "model": "m", "messages": messages}, headers={"Authorization": "Bearer k"})
        answer = httpx.post(f"{self.fallback}/v1/messages", json={
            "model": "m", "max_tokens": 8, "messages": messages}, timeout=5, verify=tls(),
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}).json()
        with self.lock:
            self.jobs[key].update(status="succeeded", result={"text": answer["content"][0]["text"]})


def _profile(primary: int, fallback: int) -> DrillProfile:
    return jobs_profile("clicks", primary, fallback,
                        {"provider_s": TIMEOUT_S, "job_s": 3, "settle_s": 0.3},
                        policy={"hedge": {"allowed": True, "after_s": TIMEOUT_S}})


@pytest.fixture(params=[True, False], ids=["barrier", "plain"])
def jobs(request: pytest.FixtureRequest) -> Iterator[tuple[Jobs, int, int]]:
    primary, fallback = free_port(), free_port()
    service = Jobs(f"http://127.0.0.1:{primary}", f"http://127.0.0.1:{fallback}",
                   together=request.param)
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service, primary, fallback
    service.server.shutdown()
    service.server.server_close()
    thread.join(timeout=10)


def test_a_double_click_sends_both_submits_at_once_and_a_re_click_after_the_timeout(
        jobs: tuple[Jobs, int, int]) -> None:
    service, primary, fallback = jobs
    drills = ("double-click",) if service.together else ("re-click",)
    outcome = drill(DrillSettings(profile=_profile(primary, fallback), target=service.url,
                                  env={}, drills=drills, trials=2, probe=False))
    for verdict in outcome.results.verdicts[drills[0]]:
        ev = verdict.evidence
        statuses = sorted(s.status or 0 for s in ev.submissions)
        if service.together:  # both in flight at once: the barrier let both through
            assert statuses == [200, 201], ev.submissions
        else:  # the re-click: after the timeout, while the primary's call is unresolved
            assert statuses == [200, 201], ev.submissions
            first = next(c for c in ev.calls if c.role == "primary")
            hedge = next(c for c in ev.calls if c.role == "fallback")
            again = max(s.at for s in ev.submissions)
            # once the service turned to the fallback after its timeout (the drill waits for
            # that call: the primary's arrival time, stamped by a loaded fake, may be late)
            assert again >= hedge.at >= min(s.at for s in ev.submissions) + TIMEOUT_S
            assert first.unresolved_at(again), (first, again)
        assert verdict.of("one_job_per_intent").verdict == "held"  # type: ignore[union-attr]
    assert outcome.verdict == "pass", [f for v in outcome.results.verdicts[drills[0]]
                                       for f in v.findings if f.verdict != "held"]


class Flawed(Jobs):
    """``brief-failed``: the job shows ``failed`` from the primary's timeout until the fallback
    answers (a few milliseconds when it answers at once); ``rerun``: 1 s after completion the
    job is run again (a redelivery) and the new answer overwrites the result."""

    def __init__(self, primary: str, fallback: str, flaw: str) -> None:
        super().__init__(primary, fallback, together=False)
        self.flaw = flaw

    def work(self, key: str, text: str) -> None:
        messages = [{"role": "user", "content": text}]
        with httpx.Client(timeout=TIMEOUT_S, verify=tls()) as http, \
                contextlib.suppress(httpx.HTTPError):
            http.post(f"{self.primary}/v1/chat/completions", json={
                "model": "m", "messages": messages}, headers={"Authorization": "Bearer k"})
        if self.flaw == "brief-failed":
            with self.lock:
                self.jobs[key]["status"] = "failed"
        for run in range(2 if self.flaw == "rerun" else 1):
            if run:
                threading.Event().wait(1.0)  # the queue's redelivery delay (its own)
            answer = httpx.post(f"{self.fallback}/v1/messages", json={
                "model": "m", "max_tokens": 8, "messages": messages}, timeout=5, verify=tls(),
                headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}).json()
            with self.lock:
                self.jobs[key].update(status="succeeded",
                                      result={"text": answer["content"][0]["text"]})


def serve(flaw: str, primary: int, fallback: int) -> None:
    """Serve a :class:`Flawed` service in a process of its own (prints its URL)."""
    service = Flawed(f"http://127.0.0.1:{primary}", f"http://127.0.0.1:{fallback}", flaw)
    print(service.url, flush=True)
    service.server.serve_forever()


@pytest.fixture
def flawed(request: pytest.FixtureRequest) -> Iterator[tuple[str, int, int]]:
    """A :class:`Flawed` service in its own process (a service under drill does not share the
    drill's interpreter): (url, primary port, fallback port)."""
    primary, fallback = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", f"from tests.drill.test_clicks import serve; "
         f"serve({request.param!r}, {primary}, {fallback})"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://"), url
        yield url, primary, fallback
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize(("flawed", "broken"), [
    ("brief-failed", {"timeout_not_failure"}),
    ("rerun", {"one_winner_per_job", "no_call_after_completion", "billed_within_bound",
               "within_hedge"}),
], indirect=["flawed"])
def test_held_answers_and_settle_catch_a_brief_failed_and_a_rerun_every_time(
        flawed: tuple[str, int, int], broken: set[str]) -> None:
    """Ten hang intents at once: the held fallback answer (it waits for two looks at the job)
    makes the brief ``failed`` seen in every one; settling (2 s of quiet) past the re-run (1 s
    after completion) makes the overwrite seen in every one."""
    url, primary, fallback = flawed
    profile = _profile(primary, fallback)
    section = profile.section.model_copy(update={"timeouts": profile.section.timeouts
                                                 .model_copy(update={"settle_s": 2.0})})
    outcome = drill(DrillSettings(profile=DrillProfile("flawed", section), target=url,
                                  env={}, drills=("hang",), trials=10, probe=False))
    [event] = outcome.events
    rates = {p.promise: p for p in event.promises}
    assert {p for p, r in rates.items() if r.broken} == broken, event.promises
    for promise in broken - {"within_hedge", "billed_within_bound"}:
        rate = rates[promise]  # every intent, but one the load left without evidence (said)
        assert (rate.held, rate.broken + rate.unknown) == (0, 10), rate
        assert rate.broken >= 10 - LOAD_MISSES, rate
        assert all(map(load_caused, event.unknowns)), event.unknowns
