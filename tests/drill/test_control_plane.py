"""The control plane is not the data plane (issue 33): a service under drill that re-scripts the
fakes on the provider's own port (``POST /_fake/script``, ``/_fake/reset``) changes nothing; its
violation stays a violation. And the fakes keep a bounded prefix of a huge prompt."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from harness.domain.stream import Begin, Quiet, ReportFile, collect
from harness.drill.entry import DrillSettings, drill, run_drill
from harness.drill.events import DrillRun
from harness.providers.fake_server import FakeServer
from harness.providers.recording import BODY_LIMIT, RecordingFake
from harness.target.drill_profile import DrillProfile
from harness.target.drill_section import DrillSection
from tests._servers import JsonHandler, free_port, tls


class Forger:
    """A jobs service that, for every job, first tries to re-script the fakes as
    "conformant" on the provider's port, then calls the primary; a timeout marks the job
    ``failed`` (the promise it breaks in the hang drill)."""

    def __init__(self, primary: str) -> None:
        self.primary, self.jobs, self.forged = primary, {}, []  # type: ignore[var-annotated]
        self.lock = threading.Lock()
        forger = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                text = json.loads(self.rfile.read(int(self.headers["content-length"])))["text"]
                job = f"j{len(forger.jobs) + 1}"
                with forger.lock:
                    forger.jobs[job] = {"id": job, "status": "running", "result": None}
                threading.Thread(target=forger.work, args=(job, text), daemon=True).start()
                self.send_json(201, {"id": job})

            def do_GET(self) -> None:
                with forger.lock:
                    job = forger.jobs.get(self.path.rsplit("/", 1)[-1])
                self.send_json(200 if job else 404, job or {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def work(self, job: str, text: str) -> None:
        tag = text.split()[-1]
        with httpx.Client(base_url=self.primary, timeout=0.4, verify=tls()) as http:
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
    section = forger_section(port)
    outcome = drill(DrillSettings(profile=DrillProfile("forger", section), target=service.url,
                                  env={}, drills=("hang",), trials=3))
    assert outcome.verdict == "fail"
    [event] = outcome.events
    rates = {p.promise: p for p in event.promises}
    assert rates["timeout_not_failure"].broken == 3  # every intent: still hung, still failed
    assert service.forged and set(service.forged) == {404}  # no control endpoint answered
    hung = [line for i in event.intents for line in i.calls if "scripted hang" in line]
    assert len(hung) == 3


def test_the_drill_entry_point_is_a_stream_without_the_cli(
        forger: tuple[Forger, int], tmp_path: Path) -> None:
    """``run_drill``: Begin once the fakes serve, one drill_run, drill.json as a file of the
    report folder with every intent's counts, the verdict returned; live lines say where the
    fakes are and, with ``progress``, each intent that did not pass."""
    service, port = forger
    lines: list[str] = []

    class Lines(Quiet):
        def say(self, text: str) -> None:
            lines.append(text)

    settings = DrillSettings(profile=DrillProfile("forger", forger_section(port)),
                             target=service.url, env={}, drills=("hang",), trials=2,
                             progress=True)
    messages, verdict = collect(run_drill(settings, folder=lambda: tmp_path, live=Lines()))
    assert isinstance(messages[0], Begin) and messages[0].targets == (service.url,)
    runs = [m for m in messages if isinstance(m, DrillRun)]
    assert [r.drill for r in runs] == ["hang"] and runs[0].outcome == "fail"
    assert verdict == "fail"
    [report] = [m for m in messages if isinstance(m, ReportFile)]
    assert report.name == "drill.json" and report.data["target"] == service.url
    assert len(report.data["drills"]["hang"]) == 2  # every intent, not only the failing ones
    assert "the providers are served at gpt (openai-chat)" in lines[0]
    assert sum("hang          trial" in line and "timeout_not_failure" in line
               for line in lines) == 2
    assert lines[-1].endswith(f"every intent's counts in {tmp_path / 'drill.json'}")


def forger_section(port: int) -> DrillSection:
    return DrillSection.model_validate({
        "submit": {"path": "/jobs", "body": {"text": "summarise {tag}"}},
        "observe": {"path": "/jobs/{job_id}", "result_field": "result.text", "poll_s": 0.02,
                    "statuses": {"succeeded": ["succeeded"], "failed": ["failed"],
                                 "running": ["running"]}},
        "providers": [{"name": "gpt", "wire": "openai", "role": "primary", "port": port},
                      {"name": "claude", "wire": "anthropic", "role": "fallback",
                       "port": free_port()}],
        "timeouts": {"provider_s": 0.4, "job_s": 3, "settle_s": 0.3},
    })


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
