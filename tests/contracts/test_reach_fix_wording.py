"""The fix for an unreached provider never prints ``$None``: a provider with no api_key_env
(a fake) gets words for the key, not a variable that does not exist (faults helper's finding)."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.gateways.sources import open_workspace

ROOT = Path(__file__).resolve().parents[2]

PROVIDERS = """\
version: 1
providers:
  keyless:
    kind: openai-chat
    base_url: fake://conformant
    model: m
    temperature: 0
    max_output_tokens: 512
    timeout: {connect: 2, read: 60}
    tokenizer: tiktoken:cl100k_base
    context_window: 128000
chains:
  ticket_triage:
    - {provider: keyless, failover: auto}
"""


def test_a_keyless_provider_s_fix_names_no_none_variable(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    (tmp_path / "providers.yaml").write_text(PROVIDERS, "utf-8")
    ws = open_workspace(tmp_path / "providers.yaml")
    reason = "could not reach 'keyless': the key was refused (HTTP 401)"
    fix = ws.reach_fix("keyless", reason, "CMD")
    assert "$None" not in fix, fix
    assert "none is configured: set api_key_env" in fix and fix.endswith("run: CMD")
