"""docs/api.md's "Call it with curl" block, pasted into bash as it is (only the port changed),
against a real `failover-harness serve` started with the tokens docs/api.md exports: every
step works and the claim is won (qa Q13: the block used $JOB and $ATT without setting them)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.service.serving import ServeProcess

ROOT = Path(__file__).resolve().parents[2]


def curl_block() -> str:
    text = (ROOT / "docs" / "api.md").read_text("utf-8")
    section = text.split("## Call it with curl", 1)[1]
    match = re.search(r"```\n(.*?)```", section, re.S)
    assert match, "docs/api.md lost its curl block"
    return match.group(1)


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
def test_the_curl_block_of_docs_api_md_runs_as_pasted(tmp_path: Path) -> None:
    exported = re.search(r'HARNESS_TOKENS="([^"]+)"',
                         (ROOT / "docs" / "api.md").read_text("utf-8"))
    assert exported, "docs/api.md no longer exports HARNESS_TOKENS"
    tokens = dict(pair.split("=", 1) for pair in exported.group(1).split(","))
    server = ServeProcess(db=f"sqlite:///{tmp_path / 'harness.db'}",
                          log_path=tmp_path / "serve.log", tokens=tokens).wait_ready()
    try:
        script = "set -eu\n" + curl_block().replace("127.0.0.1:8787", f"127.0.0.1:{server.port}")
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                              timeout=120)
    finally:
        server.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert '"outcome":"won"' in out.replace(" ", ""), out
    assert '"state":"running"' in out.replace(" ", ""), out  # the dispatched event
    assert '"openapi"' in out, out
