"""Real ``failover-harness serve`` processes on loopback: start, wait until ready, stop, logs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from tests import _cli
from tests._servers import free_port, tls

READY_TIMEOUT_S = 60.0
# Test tokens: long and distinctive, so that finding one in a log cannot be a coincidence.
ALICE_TOKEN = "tok-alice-Zq7vR2mK9xLp4Wd8"
BOB_TOKEN = "tok-bob-Hn3sT6yB1cFg5Ue0"
TOKENS = {ALICE_TOKEN: "alice", BOB_TOKEN: "bob"}


class ServeProcess:
    """One ``failover-harness serve`` process; its stdout and stderr go to ``log_path``."""

    def __init__(
        self,
        *,
        db: str,
        log_path: Path,
        tokens: Mapping[str, str] | None = None,
        tokens_file: Path | None = None,
        workers: int = 1,
        extra: Sequence[str] = (),
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_TOKENS"}
        if tokens is not None:
            env["HARNESS_TOKENS"] = ",".join(f"{t}={o}" for t, o in tokens.items())
        args = ["serve", "--db", db, "--port", str(self.port), "--workers", str(workers), *extra]
        if tokens_file is not None:
            args += ["--tokens-file", str(tokens_file)]
        self._log = log_path.open("wb")
        self.proc = _cli.popen(args, stdout=self._log, stderr=_cli.STDOUT, env=env)

    def log_text(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text("utf-8", errors="replace")

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> ServeProcess:
        """Poll ``GET /healthz`` until it answers 200; fail with the log if the process died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"serve exited with {self.proc.returncode}:\n{self.log_text()}"
                )
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2.0, verify=tls()).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            # Wait a little between polls, but wake at once if the process dies.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.05)
        self.stop()
        raise AssertionError(f"serve was not ready within {timeout} s:\n{self.log_text()}")

    def stop(self) -> int:
        """SIGTERM (graceful), then SIGKILL if it does not exit; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def run_cli(
    args: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``failover-harness ARGS`` in a process of its own (tests/_cli.py), capturing its
    output."""
    full_env = {k: v for k, v in os.environ.items() if k != "HARNESS_TOKENS"}
    full_env.update(env or {})
    return _cli.run(list(args), env=full_env, timeout=60)
