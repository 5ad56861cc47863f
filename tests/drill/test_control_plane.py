"""The control plane is not the data plane (issue 33): a service under drill that re-scripts the
fakes on the provider's own port (``POST /_fake/script``, ``/_fake/reset``) changes nothing; its
violation stays a violation. And the fakes keep a bounded prefix of a huge prompt."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from harness.drill.entry import DrillSettings, drill
from harness.providers.fake_server import FakeServer
from harness.providers.recording import BODY_LIMIT, RecordingFake
from harness.target.drill_profile import DrillProfile
from harness.target.drill_section import DrillSection
from tests._servers import free_port


class Forger:
    """A jobs service that, for every job, first tries to re-script the fakes as
    "conformant" on the provider's port, then calls the primary; a timeout marks the job
    ``failed`` (the promise it breaks in the hang drill)."""

    def __init__(self, primary: str) -> None:
        self.primary, self.jobs, self.forged = primary, {}, []  # type: ignore[var-annotated]
        self.lock = threading.Lock()
        forger = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                text = json.loads(self.rfile.read(int(self.headers["content-length"])))["text"]
                job = f"j{len(forger.jobs) + 1}"
                with forger.lock:
                    forger.jobs[job] = {"id": job, "status": "running", "result": None}
                threading.Thread(target=forger.work, args=(job, text), daemon=True).start()
                self._send(201, {"id": job})

            def do_GET(self) -> None:
                with forger.lock:
                    job = forger.jobs.get(self.path.rsplit("/", 1)[-1])
                self._send(200 if job else 404, job or {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def work(self, job: str, text: str) -> None:
        tag = text.split()[-1]
        with httpx.Client(base_url=self.primary, timeout=0.4) as http:
            for body in ({"behaviour": "conformant", "tag": tag}, {"behaviour": "conformant"}):
                self.forged.append(http.post("/_fake/script", json=body).status_code)
            self.forged.append(http.post("/_fake/reset").status_code)
            self.forged.append(http.get("/_fake/received").status_code)
            try:
                answer = http.post("/v1/chat/completions", json={
                    "model": "m", "messages": [{"role": "user", "content": text}]},
                    headers={"Authorization": "Bearer k"})
                result = {"text": answer.json()["choices"][0]["message"]["content"]}
                state = "succeeded"
            except httpx.HTTPError:
                result, state = None, "failed"  # a timeout taken for a failure
        with self.lock:
            self.jobs[job].update(status=state, result=result)


@pytest.fixture
def forger() -> Iterator[tuple[Forger, int]]:
    port = free_port()
    service = Forger(f"http://127.0.0.1:{port}")
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service, port
    service.server.shutdown()
    service.server.server_close()
    thread.join(timeout=10)


def test_a_service_that_rescripts_the_fakes_cannot_turn_a_violation_into_a_pass(
        forger: tuple[Forger, int]) -> None:
    service, port = forger
    section = DrillSection.model_validate({
        "submit": {"path": "/jobs", "body": {"text": "summarise {tag}"}},
        "observe": {"path": "/jobs/{job_id}", "result_field": "result.text", "poll_s": 0.02,
                    "statuses": {"succeeded": ["succeeded"], "failed": ["failed"],
                                 "running": ["running"]}},
        "providers": [{"name": "gpt", "wire": "openai", "role": "primary", "port": port},
                      {"name": "claude", "wire": "anthropic", "role": "fallback",
                       "port": free_port()}],
        "timeouts": {"provider_s": 0.4, "job_s": 3, "settle_s": 0.3},
    })
    outcome = drill(DrillSettings(profile=DrillProfile("forger", section), target=service.url,
                                  env={}, drills=("hang",), trials=3))
    assert outcome.verdict == "fail"
    [event] = outcome.events
    rates = {p.promise: p for p in event.promises}
    assert rates["timeout_not_failure"].broken == 3  # every intent: still hung, still failed
    assert service.forged and set(service.forged) == {404}  # no control endpoint answered
    hung = [line for i in event.intents for line in i.calls if "scripted hang" in line]
    assert len(hung) == 3


def test_the_fakes_keep_a_bounded_prefix_of_a_huge_prompt() -> None:
    fake = RecordingFake("openai-chat", name="gpt", signed=True, control=False)
    huge = "drill-0123456789ab " + "x" * (4 * BODY_LIMIT)
    with FakeServer(fake) as server, httpx.Client(base_url=f"{server.url}/v1") as client:
        answer = client.post("/chat/completions", headers={"Authorization": "Bearer k"},
                             json={"model": "m", "messages": [{"role": "user", "content": huge}]})
        assert answer.status_code == 200
        assert client.get(f"{server.url}/_fake/received").status_code == 404  # control off
    [record] = fake.received()
    assert record.tag == "drill-0123456789ab"  # found in the whole body
    assert record.body["bytes"] > 4 * BODY_LIMIT
    assert len(record.body["prefix"]) == BODY_LIMIT  # kept: the prefix only
