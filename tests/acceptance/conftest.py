"""Fixtures for the acceptance tests: the independent service of qa_service.py as a process,
and stdlib servers that answer nonsense."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests import _watchdog

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROFILE = HERE / "qa_service.profile.yaml"
ALICE, BOB = "qa-tok-alice-7Hq2", "qa-tok-bob-Lp93"  # bearer tokens no output may show


class QaService:
    """``tests/acceptance/qa_service.py`` in its own process; ``url`` is its base URL (several,
    comma-separated, with replicas)."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.tokens = tmp / "tokens.yaml"
        self.tokens.write_text(f"{ALICE}: alice\n{BOB}: bob\n", "utf-8")
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "qa_service.py"), "--port", "0",
             "--tokens-file", str(self.tokens), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _watchdog.watch(self.process.pid)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once every socket accepts
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"qa_service did not start: {line!r}")
        self.url = line.removeprefix("listening on ").strip()

    def stop(self) -> None:
        _watchdog.stop(self.process)
        if self.process.stdout:
            self.process.stdout.close()


@pytest.fixture
def qa_service(tmp_path: Path) -> Iterator[Callable[..., QaService]]:
    """Start the independent service (options as on its command line); stopped after the test."""
    started: list[QaService] = []

    def start(*args: str) -> QaService:
        service = QaService(tmp_path, *args)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


@pytest.fixture
def answering() -> Iterator[Callable[..., str]]:
    """A loopback HTTP/1.1 server answering every request with one status and JSON body
    (``reads=(status, body)``: GET requests get that instead, e.g. a read-only token;
    ``paths={path: (status, body)}``: that path gets its own answer)."""
    servers: list[ThreadingHTTPServer] = []

    def start(status: int, body: object, *, reads: tuple[int, object] | None = None,
              paths: dict[str, tuple[int, object]] | None = None) -> str:
        answers = {"": (status, json.dumps(body).encode())}
        if reads is not None:
            answers["GET"] = (reads[0], json.dumps(reads[1]).encode())
        for path, (code, value) in (paths or {}).items():  # a path's own answer, any method
            answers[path] = (code, json.dumps(value).encode())

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                code, data = answers.get(self.path.split("?")[0]) or answers.get(
                    self.command, answers[""])
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
