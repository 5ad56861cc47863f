"""The user's service and its storage, as explore ``--through`` meets them: is the storage there
and speaking the protocol, start the service pointed at the proxy, wait for its health, stop it.

Every way this can fail is exit 2 with what was seen and the fix — never "no race found".
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from harness.domain.errors import ConfigError
from harness.explore.proxy import Upstream
from harness.scenarios.targets.base import redact
from harness.tls import tls_for

HEALTH_TIMEOUT_S = 30.0
HEALTH_POLL_S = 0.05  # how often a starting service is asked for its health (it says nothing)
STOP_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 3.0


def check_storage(upstream: Upstream) -> None:
    """The storage server answers, in its protocol (PostgreSQL is checked when the controller
    connects to it for ``pg_blocking_pids``)."""
    where = f"{upstream.host}:{upstream.port}"
    try:
        conn = socket.create_connection((upstream.host, upstream.port), timeout=PROBE_TIMEOUT_S)
    except OSError as exc:
        raise ConfigError(f"cannot reach the storage server at {where}: "
                          f"{exc.strerror or exc}", field="--through",
                          fix="start it (e.g. redis-server --port N), or fix the host and port "
                          "in --through") from None
    if upstream.kind != "redis":
        conn.close()
        return
    with conn:
        try:
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            answer = conn.recv(64)
        except OSError as exc:
            answer = f"an error ({exc.strerror or exc})".encode()
    if answer[:1] not in (b"+", b"-"):
        raise ConfigError(f"{where} answered PING with {answer[:32]!r}, which is not Redis",
                          field="--through", fix="point --through at the Redis server the "
                          "service uses (redis://HOST:PORT/DB)")


def parse_listen(text: str | None) -> tuple[str, int]:
    """``--listen HOST:PORT`` (default: a free loopback port)."""
    if not text:
        return "127.0.0.1", 0
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{text!r} is not HOST:PORT", field="--listen",
                          fix="write e.g. 127.0.0.1:7001 (or leave --listen out for a free port)")
    return host, int(port)


def service_argv(command: str, proxy_url: str) -> list[str]:
    """``--service-cmd`` as argv: ``{proxy}`` is the proxy's URL, and the service runs with the
    harness's own Python: ``{python}``, or a leading ``python``/``python3``, is
    ``sys.executable`` (not whatever ``python`` the PATH finds first)."""
    try:
        argv = shlex.split(command.replace("{proxy}", proxy_url))
    except ValueError as exc:
        raise ConfigError(f"the command cannot be split into words: {exc}",
                          field="--service-cmd", fix="balance its quotes") from None
    if not argv:
        raise ConfigError("the command is empty", field="--service-cmd",
                          fix="give the command that starts your service")
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return [a.replace("{python}", sys.executable) for a in argv]


class ServiceProcess:
    """The user's service, started after the proxy with ``{proxy}`` and ``HARNESS_PROXY_URL``."""

    def __init__(self, command: str, proxy_url: str, log: Path) -> None:
        self.command = command
        self.shown = command.replace("{proxy}", redact(proxy_url))
        argv = service_argv(command, proxy_url)
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log
        self.output = log.open("wb")
        try:
            self.process = subprocess.Popen(
                argv, stdout=self.output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "HARNESS_PROXY_URL": proxy_url})
        except OSError as exc:
            self.output.close()
            raise ConfigError(f"cannot start {argv[0]!r}: {exc.strerror or exc}",
                              field="--service-cmd", fix="check the command and its path") \
                from None

    def tail(self, lines: int = 12) -> str:
        try:
            text = self.log.read_text("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n".join(f"    | {line}" for line in text)

    def exited(self) -> int | None:
        return self.process.poll()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.output.close()


def wait_healthy(url: str, path: str, service: ServiceProcess | None,
                 timeout_s: float = HEALTH_TIMEOUT_S,
                 check: Callable[[], None] = lambda: None) -> None:
    """Until ``GET url+path`` answers below 500; exit 2 with the service's output otherwise.
    ``check`` raises as soon as the proxy has seen something wrong."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        check()
        if service is not None and (code := service.exited()) is not None:
            raise ConfigError(
                f"the service exited with status {code} before it was healthy:\n"
                f"{service.tail()}", field="--service-cmd",
                fix=f"run `{service.shown}` by hand and fix what it says")
        try:
            answer = httpx.get(url + path, timeout=PROBE_TIMEOUT_S, verify=tls_for(url))
            if answer.status_code < 500:
                return
            last = f"{answer.status_code}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        if time.monotonic() >= deadline:
            shown = f"\n{service.tail()}" if service is not None else ""
            raise ConfigError(
                f"{redact(url)}{path} did not answer below 500 within {timeout_s:g} s (last: "
                f"{last}){shown}", field="--target",
                fix="start the service (or pass --service-cmd), check --target's port, or name "
                "its health endpoint with --health-path")
        time.sleep(HEALTH_POLL_S)
