"""A real LiteLLM proxy as a subprocess on a free loopback port, kept offline."""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests import _watchdog
from tests._servers import free_port

MASTER_KEY = "sk-failover-harness-test-master"  # a test value, not a secret
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no model-cost download at start
    "LITELLM_MASTER_KEY": MASTER_KEY,
    "LITELLM_TELEMETRY": "False",
    "DISABLE_ADMIN_UI": "True",
    "LITELLM_LOG": "ERROR",
}


class LoopbackProcess:
    """A server subprocess on 127.0.0.1:``port`` whose output goes to ``log``."""

    def __init__(self, log: Path, port: int | None = None) -> None:
        self.log = log
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def launch(self, command: list[str], env: dict[str, str], health: str, timeout_s: float,
               cwd: Path | None = None) -> None:
        """Start ``command`` and return once GET ``health`` answers 200; raise with the log's
        tail (and stop it) when it exits first or nothing answers in ``timeout_s``."""
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, cwd=cwd, stdout=out,
                                            stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        _watchdog.watch(self.process.pid, group=True)
        name = Path(command[0]).name
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.process.returncode}:\n"
                                   f"{self.log.read_text(errors='replace')[-3000:]}")
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                conn.request("GET", health)
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                conn.close()
            time.sleep(0.25)  # polling for a process to come up, not synchronising a test
        self.stop()
        raise TimeoutError(f"{name} did not answer in {timeout_s} s:\n"
                           f"{self.log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.process is not None:
            _watchdog.stop(self.process, timeout_s=15)


class LiteLLMProxy(LoopbackProcess):
    """``litellm --config FILE`` on 127.0.0.1; ``start()`` returns once it answers health."""

    def __init__(self, config: Path, log: Path, *, port: int | None = None) -> None:
        super().__init__(log, port)
        self.config = config

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 120.0) -> LiteLLMProxy:
        script = Path(sys.executable).with_name("litellm")
        command = [str(script)] if script.exists() else [shutil.which("litellm") or "litellm"]
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
        env.update(OFFLINE_ENV)
        self.launch([*command, "--config", str(self.config), "--host", "127.0.0.1",
                     "--port", str(self.port), "--num_workers", "1"],
                    env, "/health/liveliness", timeout_s)
        return self
