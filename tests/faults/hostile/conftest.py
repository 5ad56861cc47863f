"""Hostile services for the drill: a probe (tests/faults/hostile/probe.py) behind a drill
profile whose providers listen on free loopback ports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests._servers import free_port

SECRET = "sk-hostile-Zq81xT0w7RkP"  # sent in the profile's headers from ${SECRET_TOKEN}
HEADER_SECRET = "hdr-secret-4VQ2m9Lk"  # sent with --header "X-Api-Key: ..."

PROFILE = """\
name: hostile-probe
drill:
  submit:
    kind: create_job
    path: /jobs
    headers: {Idempotency-Key: "{key}", Authorization: "Bearer ${SECRET_TOKEN}"}
    body: {text: "Summarise ticket {tag} in one line."}
    id_field: id
  observe:
    path: "/jobs/{job_id}"
    headers: {Authorization: "Bearer ${SECRET_TOKEN}"}
    status_field: status
    result_field: result.text
    statuses: {succeeded: [succeeded], failed: [failed], running: [running, queued]}
    poll_s: 0.02
  providers:
    - {name: gpt, wire: openai, role: primary, port: "${PRIMARY_PORT}"}
    - {name: claude, wire: anthropic, role: fallback, port: "${FALLBACK_PORT}"}
  timeouts: {provider_s: 0.2, job_s: 0.6, settle_s: 0.5}
  policy: {max_billed_calls: 2, hedge: {allowed: false}}
"""
# settle_s: the quiet period after a job completes (by default 5 s for a jobs service, for a
# queue's redelivery); the probes make every provider call before they answer the submit


@pytest.fixture
def drill_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(the profile, the environment it reads: free provider ports and the secret)."""
    profile = tmp_path / "hostile.profile.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    env = {"PRIMARY_PORT": str(free_port()), "FALLBACK_PORT": str(free_port()),
           "SECRET_TOKEN": SECRET}
    return profile, env


def every_output(folder: Path) -> Callable[[], dict[str, str]]:
    """Every file under ``folder`` as text (report files, drill.json, run folders)."""
    def read() -> dict[str, str]:
        return {str(p.relative_to(folder)): p.read_text("utf-8", errors="replace")
                for p in sorted(folder.rglob("*")) if p.is_file()}
    return read
