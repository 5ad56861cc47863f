"""The real Portkey gateway (``@portkey-ai/gateway``, pinned in tests/gateways/node/) as a node
subprocess on a free loopback port.

The gateway takes its routing config per request (the ``x-portkey-config`` header), so one
process serves every test. It listens on every interface unless told otherwise and has no host
option: ``loopback.mjs`` is preloaded to keep it on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.gateways.litellm_proxy import LoopbackProcess

NODE_DIR = Path(__file__).resolve().parent / "node"
ENTRY = NODE_DIR / "node_modules" / "@portkey-ai" / "gateway" / "build" / "start-server.js"
PRELOAD = NODE_DIR / "loopback.mjs"


def node_or_skip() -> str:
    """The node executable with the gateway installed; else skip (locally) or fail (in CI, where
    HARNESS_REQUIRE_NODE=1), saying why and how to fix it."""
    node = shutil.which("node")
    if node is None:
        reason = "the Portkey gateway tests need node (fix: install Node.js 20)"
    elif not ENTRY.exists():
        reason = (f"the Portkey gateway is not installed (fix: cd {NODE_DIR} && npm ci)")
    else:
        return node
    if os.environ.get("HARNESS_REQUIRE_NODE") == "1":
        pytest.fail(f"HARNESS_REQUIRE_NODE=1 but {reason}")
    pytest.skip(reason)


class PortkeyGateway(LoopbackProcess):
    """``node start-server.js --port=N --headless`` on 127.0.0.1; ``start()`` returns once it
    answers ``GET /``."""

    def __init__(self, node: str, log: Path, *, port: int | None = None) -> None:
        super().__init__(log, port)
        self.node = node

    @property
    def url(self) -> str:
        """The gateway's OpenAI-compatible base URL (``/v1`` included)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 60.0) -> PortkeyGateway:
        env = {**os.environ, "NODE_ENV": "production"}  # no log-streaming UI routes
        self.launch([self.node, "--import", PRELOAD.as_uri(), str(ENTRY), f"--port={self.port}",
                     "--headless"], env, "/", timeout_s, cwd=NODE_DIR)
        return self
