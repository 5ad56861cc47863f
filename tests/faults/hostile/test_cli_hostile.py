"""The CLI against hostile services: a secret the service echoes reaches no output, and the
exit codes of a run that cannot be judged (issue 33)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness.cli import main
from tests.faults.hostile.conftest import HEADER_SECRET, SECRET, every_output
from tests.faults.hostile.probe import Answer, Probe, Request, call_provider


def echoing(primary: str) -> tuple[Probe, list[str]]:
    """A service that echoes the credentials it gets in every field it controls: a 401 body
    (the second submit: the first is the drill's control probe, which must reach the fakes or
    the run stops there), the job id, the job's status and its result."""
    lock, seen, posts = threading.Lock(), [], []

    def answer(request: Request) -> Answer:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        key = request.headers.get("x-api-key", "")
        echo = f"{token} {key}"
        with lock:
            seen.append(echo)
            if request.method == "POST":
                posts.append(echo)
            refused = request.method == "POST" and len(posts) == 2
        if refused:
            return Answer.json({"error": f"unknown token {echo}", "detail": token}, 401)
        if request.method == "POST":
            call_provider(primary, json.loads(request.body)["text"])
            return Answer.json({"id": f"job-{token}"}, 201, **{"X-Echo": echo})
        return Answer.json({"id": f"job-{token}", "status": token,
                            "result": {"text": f"answer for {echo}"}})
    return Probe(answer), seen


def test_a_secret_the_service_echoes_reaches_no_output(
        drill_env: tuple[Path, dict[str, str]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    profile, env = drill_env
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    probe, seen = echoing(env["PRIMARY_PORT"])
    reports = tmp_path / "reports"
    with probe:
        code = main(["drill", "--target", probe.url, "--target-profile", str(profile),
                     "--drills", "control,hang", "--header", f"X-Api-Key: {HEADER_SECRET}",
                     "--verbose", "--report-dir", str(reports)])
    out = capfd.readouterr()
    assert code in (1, 3)
    assert any(SECRET in s and HEADER_SECRET in s for s in seen)  # it really was echoed
    outputs = {"stdout": out.out, "stderr": out.err, **every_output(reports)()}
    assert {"results.json", "junit.xml", "summary.md", "index.html", "drill.json"} <= {
        Path(name).name for name in outputs}
    for name, text in outputs.items():
        assert SECRET not in text, name
        assert HEADER_SECRET not in text, name
    redacted = {Path(name).name for name, text in outputs.items() if "[REDACTED]" in text}
    assert {"stdout", "drill.json", "results.json", "summary.md"} <= redacted


CHECK_PROFILE = """\
name: echo
capabilities: [jobs]
operations:
  create_job: {method: POST, path: /jobs, key_header: Idempotency-Key}
  get_job: {method: GET, path: "/jobs/{job_id}"}
"""
TOKENS = {"sk-check-secret-AAAA1111": "alice", "sk-check-secret-BBBB2222": "bob"}


def test_check_against_a_service_echoing_its_bearer_tokens_prints_none(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    def answer(request: Request) -> Answer:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        return Answer.json({"id": f"job-{token}", "status": token, "detail": f"hi {token}"},
                           201 if request.method == "POST" else 200)

    (tmp_path / "p.yaml").write_text(CHECK_PROFILE, encoding="utf-8")
    (tmp_path / "t.yaml").write_text("".join(f"{t}: {o}\n" for t, o in TOKENS.items()))
    root = Path(__file__).resolve().parents[3]
    with Probe(answer) as probe:
        code = main(["check", "--target", probe.url, "--target-profile", str(tmp_path / "p.yaml"),
                     "--tokens-file", str(tmp_path / "t.yaml"), "--no-certify", "--scenarios",
                     str(root / "scenarios" / "double_click.yaml"),
                     "--report-dir", str(tmp_path / "reports")])
    out = capfd.readouterr()
    assert code == 1  # every create answered 201: one_job_per_intent broken
    assert any(t in r.headers.get("authorization", "") for r in probe.requests for t in TOKENS)
    outputs = {"stdout": out.out, "stderr": out.err, **every_output(tmp_path / "reports")()}
    assert any(name.endswith("history.jsonl") for name in outputs)
    for name, text in outputs.items():
        assert not any(token in text for token in TOKENS), name
    assert "[REDACTED]" in outputs["stdout"]
