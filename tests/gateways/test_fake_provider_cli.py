"""The CLI fake provider records what it received and streams, on both wire formats."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import httpx
import pytest

from harness.providers.fake_server import wait_until_ready
from tests import _cli

BODIES = {
    "openai-chat": ("/v1/chat/completions", {
        "model": "gpt-4o-mini", "temperature": 0.9, "stream": True,
        "messages": [{"role": "user", "content": "hello from the gateway"}]}),
    "anthropic-messages": ("/v1/messages", {
        "model": "claude-3-5-haiku-20241022", "max_tokens": 64, "stream": True,
        "messages": [{"role": "user", "content": "hello from the gateway"}]}),
}
HEADERS = {"openai-chat": {"authorization": "Bearer sk-cli-secret-1234"},
           "anthropic-messages": {"x-api-key": "sk-cli-secret-1234",
                                  "anthropic-version": "2023-06-01"}}


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
def test_it_streams_and_records_what_it_received(kind: str, tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    proc = _cli.popen(["fake-provider", "--kind", kind, "--port", "0", "--log", str(log)])
    try:
        assert proc.stdout is not None
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", proc.stdout.readline())
        assert match
        token = re.search(r"x-fake-control-token: (\S+)", proc.stdout.readline())
        assert token  # the control endpoints need the run's token (printed at start)
        port = int(match.group(1))
        wait_until_ready("127.0.0.1", port, alive=lambda: proc.poll() is None)
        path, body = BODIES[kind]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            with http.stream("POST", path, json=body, headers=HEADERS[kind]) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                events = [line for line in response.iter_lines() if line.startswith("data:")]
            assert len(events) >= 2  # an answer in several SSE events
            assert http.get("/_fake/received").status_code == 401  # no token: refused
            received = http.get("/_fake/received",
                                headers={"x-fake-control-token": token.group(1)}).json()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert [(r["path"], r["stream"], r["outcome"]) for r in received] == [(path, True, "answered")]
    assert received[0]["body"] == body  # what a gateway in front of it actually sent
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["body"] for r in logged] == [body]
    assert "sk-cli-secret-1234" not in log.read_text() + json.dumps(received)  # keys masked
    assert "(1 request received" in err
