"""A real ``serve`` process: access lines are logged (with redaction), its port errors are
bad input, and its workers die with it."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx

from harness.commands.serve import log_config
from harness.providers.secrets import RedactingFilter, register_secret
from tests.service.serving import TOKENS, ServeProcess

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


def test_the_access_formatter_gets_its_arguments_and_secrets_are_redacted(capsys) -> None:
    """uvicorn's access formatter unpacks ``record.args``: the filter must keep them."""
    import logging.config

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
