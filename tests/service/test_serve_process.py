"""A real ``serve`` process: access lines are logged (with redaction), its port errors are
bad input, and its workers die with it."""

from __future__ import annotations

import logging
import signal
import socket
from pathlib import Path

import httpx
import psutil

from harness.commands.serve import log_config
from harness.providers.secrets import RedactingFilter, register_secret
from tests.service.serving import TOKENS, ServeProcess, run_cli

CANARY = "canary-path-secret-7Yq2Lw"


def test_serve_logs_one_access_line_per_request_and_no_logging_error(tmp_path: Path) -> None:
    server = ServeProcess(db=f"sqlite:///{tmp_path / 'h.db'}", log_path=tmp_path / "serve.log",
                          tokens=TOKENS).wait_ready()
    try:
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        assert httpx.get(f"{server.url}/v1/jobs/nope", timeout=10).status_code == 401
    finally:
        server.stop()
    log = server.log_text()
    assert "Logging error" not in log and "Traceback" not in log, log
    assert '"GET /healthz HTTP/1.1" 200' in log, log
    assert '"GET /v1/jobs/nope HTTP/1.1" 401' in log, log


def test_the_access_formatter_gets_its_arguments_and_secrets_are_redacted(
        capsys, monkeypatch) -> None:
    """uvicorn's access formatter unpacks ``record.args``: the filter must keep them."""
    import logging.config

    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access", "harness"):
        logger = logging.getLogger(name)  # as they were, for the worker's next tests (the
        for attr in ("handlers", "filters"):  # reset below leaves handlers and propagate)
            monkeypatch.setattr(logger, attr, list(getattr(logger, attr)))
        for attr in ("propagate", "level", "disabled"):
            monkeypatch.setattr(logger, attr, getattr(logger, attr))
    register_secret(CANARY)
    logging.config.dictConfig(log_config("info"))
    try:
        logger = logging.getLogger("uvicorn.access")
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET",
                    f"/v1/jobs/{CANARY}", "1.1", 404)
        logging.getLogger("harness").info("a message with %s inside", CANARY)
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    err = capsys.readouterr()
    text = err.out + err.err
    assert "Logging error" not in text, text
    assert '"GET /v1/jobs/[REDACTED] HTTP/1.1" 404' in text, text
    assert "a message with [REDACTED] inside" in text and CANARY not in text


def test_a_secret_split_between_format_and_argument_is_still_redacted() -> None:
    register_secret(CANARY)
    half = len(CANARY) // 2
    record = logging.LogRecord("x", logging.INFO, __file__, 1, CANARY[:half] + "%s",
                               (CANARY[half:],), None)
    assert RedactingFilter().filter(record)
    assert CANARY not in record.getMessage() and "[REDACTED]" in record.getMessage()


def test_an_address_in_use_is_exit_2_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(["serve", "--db", f"sqlite:///{tmp_path / 'h.db'}", "--port", str(port)],
                       env={"HARNESS_TOKENS": "tok-aaaaaaaa=alice"})
    assert done.returncode == 2, done.stderr
    assert f"127.0.0.1:{port} is already in use" in done.stderr and "fix:" in done.stderr
    assert "--port" in done.stderr and "Traceback" not in done.stderr


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_killing_serve_with_workers_takes_its_workers_down(tmp_path: Path) -> None:
    server = ServeProcess(db=f"sqlite:///{tmp_path / 'h.db'}", log_path=tmp_path / "serve.log",
                          tokens=TOKENS, workers=2).wait_ready()
    parent = psutil.Process(server.proc.pid)
    workers = parent.children(recursive=True)
    assert workers, server.log_text()
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=30)
    orphans = [p for p in alive if not _gone(p.pid)]
    for orphan in orphans:  # leave no orphan behind, even when the test fails
        orphan.kill()
    assert [p.pid for p in orphans] == [], server.log_text()
    # and the port is free again: a new serve on it starts
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", server.port))
    server.stop()
