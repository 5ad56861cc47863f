"""The small ones from the hostile probe (issue 33): one huge line, garbage bytes to the fakes,
127.0.0.2, a 100,000-deep lock file, and redaction that finds a secret JSON-escaped but never
mangles ordinary text."""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import socket
from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.redaction import REDACTED, redact, register_secret
from harness.providers.fake_server import FakeServer
from harness.providers.recording import RecordingFake
from harness.reports.live import LiveOutput
from harness.reports.markdown import render_markdown
from harness.reports.model import Results
from harness.target.drill_profile import load_drill
from tests.faults.hostile.conftest import PROFILE


def test_one_huge_line_is_bounded_on_stdout_and_in_summary_md() -> None:
    huge = "gpt#" + ", gpt#".join(str(n) for n in range(2000)) * 3  # ~37 KB, one line
    stream = io.StringIO()
    LiveOutput(stream).progress(huge)
    [printed] = stream.getvalue().splitlines()
    assert len(printed) < 2100 and "more characters in results.json" in printed
    results = Results("drill", "unknown", 3, "t0", "t1", "0", notes=(huge,))
    assert max(len(line) for line in render_markdown(results).splitlines()) < 2100


def test_garbage_bytes_to_a_fake_print_a_bounded_number_of_warnings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # what uvicorn's error log lets through to its handlers, counted by a handler of its own
    # (not caplog: what reaches the root depends on the logging configuration other tests of
    # this worker left, and pytest >= 9 also attaches caplog to non-propagating loggers).
    # The filter counts for the whole process (its output is the run's): a fresh one here, as a
    # fresh process has, whatever garbage another test of this worker sent a fake before
    error_log = logging.getLogger("uvicorn.error")
    monkeypatch.setattr(error_log, "filters", [])
    monkeypatch.setattr(error_log, "disabled", False)  # as dictConfig may leave it
    monkeypatch.setattr(error_log, "level", logging.WARNING)
    kept = logging.handlers.BufferingHandler(capacity=1000)  # keeps them all in .buffer
    monkeypatch.setattr(error_log, "handlers", [kept])
    with FakeServer(RecordingFake("openai-chat", name="gpt")) as server:
        for _ in range(40):
            with socket.create_connection(("127.0.0.1", server.port)) as conn:
                conn.sendall(b"\x16\x03\x01\x00garbage\r\n\r\n")
                conn.recv(1024)  # uvicorn answers 400 and closes: the warning was logged
    warnings = [r for r in kept.buffer if "Invalid HTTP request" in r.getMessage()]
    assert len(warnings) == 4, [r.getMessage() for r in warnings]  # three, then one saying so
    assert "further ones not shown" in warnings[-1].getMessage()


def test_127_0_0_2_is_a_loopback_address(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE.replace('role: primary, port:', 'role: primary, host: '
                                       '127.0.0.2, port:'), encoding="utf-8")
    ups = load_drill(profile).upstreams({"PRIMARY_PORT": "4101", "FALLBACK_PORT": "4102"})
    assert ups[0].host == "127.0.0.2"
    public = tmp_path / "q.yaml"
    public.write_text(PROFILE.replace('role: primary, port:', 'role: primary, host: '
                                      '10.0.0.2, port:'), encoding="utf-8")
    with pytest.raises(Exception, match="not a loopback address"):
        load_drill(public).upstreams({"PRIMARY_PORT": "4101", "FALLBACK_PORT": "4102"})


def test_a_100000_deep_lock_file_makes_gate_exit_2_with_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    (tmp_path / "providers.yaml").write_text((root / "providers.yaml").read_text("utf-8"))
    (tmp_path / "providers.lock.json").write_text("[" * 100_000 + "]" * 100_000)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "contracts").symlink_to(root / "contracts")
    code = main(["gate"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "providers.lock.json" in err and "nested too deeply" in err
    assert "RecursionError" not in err and "internal error" not in err


def test_redaction_finds_a_json_escaped_secret_and_leaves_ordinary_text_alone() -> None:
    secret = 'tok"en\\with-quote'
    register_secret(secret)
    assert secret not in redact(json.dumps({"echo": secret}))
    assert REDACTED in redact(json.dumps({"echo": secret}))
    text = "the job ended 'running' after 3 polls of /jobs/1 (tokenizer: cl100k)"
    assert redact(text) == text
