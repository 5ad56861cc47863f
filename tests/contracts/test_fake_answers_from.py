"""`fake-provider --answers-from contracts/<id>`: a real-HTTP fake answering a contract's golden
inputs — certified eligible, and labelled a fake everywhere its verdict appears."""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from harness.providers.fake_server import wait_until_ready
from tests import _cli
from tests.contracts.conftest import Project, provider

KEY_ENV = "ANSWERS_FROM_TEST_KEY"


@pytest.fixture
def served(project: Project):
    env = {**os.environ, KEY_ENV: "sk-answers-from-test-0000"}
    proc = _cli.popen(["fake-provider", "--kind", "anthropic-messages", "--port", "0",
                       "--answers-from", str(project.contract)], env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        assert "answers: golden ticket_triage" in line
        wait_until_ready("127.0.0.1", int(match.group(2)), alive=lambda: proc.poll() is None)
        yield match.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_a_loopback_fake_answering_from_the_golden_files_is_eligible_and_says_so(
    project: Project, served: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-answers-from-test-0000")
    project.write_providers({
        "primary": provider(),
        "loopback": {**provider(kind="anthropic-messages"), "base_url": served,
                     "api_key_env": KEY_ENV},
    })
    assert project.cli("certify", "--no-progress") == 0
    out = capsys.readouterr().out
    record = project.workspace().lock.get("loopback", "ticket_triage")
    assert record is not None and record.verdict == "eligible", record.why()
    assert record.provenance == "fake provider (answers from the golden file)"
    assert "fake provider (answers from the golden file)" in out
    lock = json.loads(project.lock_path.read_text("utf-8"))
    assert {r["provider"]: r["provenance"] for r in lock["certifications"]} == {
        "primary": "fake provider (answers from the golden file)",
        "loopback": "fake provider (answers from the golden file)",
    }
    latest = project.root / "reports" / "latest"
    for name in ("summary.md", "index.html", "junit.xml", "results.json"):
        text = (latest / name).read_text("utf-8")
        assert text.count("fake provider (answers from the golden file)") >= 2, name
    assert project.cli("gate") == 0
    standing = project.workspace().eligibility().standing("loopback", "ticket_triage")
    assert "fake provider (answers from the golden file)" in standing.why
