"""One engine for a gateway too: `drill --target GATEWAY --config litellm.yaml --model GROUP`
drills a real LiteLLM proxy with the profile its config fills in (chat calls through the
gateway, the group's deployments served on their api_base ports)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.gateways.conftest import Gateway  # the session's proxy: tests/conftest.py
from tests.gateways.litellm_proxy import MASTER_KEY

pytestmark = pytest.mark.slow


def test_cli_litellm_config_fills_in_the_profile(
        gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", MASTER_KEY)
    code = main(["drill", "--target", gateway.url, "--config", str(gateway.config),
                 "--model", "drill-primary", "--drills", "control,overload-429,hang",
                 "--trials", "1", "--report-dir", str(tmp_path / "r"), "--json"])
    results = json.loads(capsys.readouterr().out)
    runs = {e["drill"]: e for e in results["events"] if e["type"] == "drill_run"}
    assert runs["control"]["verdict"] == "passed", json.dumps(runs["control"]["intents"])
    assert runs["overload-429"]["verdict"] == "passed"  # refused: not billed, fallback answers
    # LiteLLM retries a timed-out primary before it falls back: more than one billed call
    hang = {p["promise"]: p for p in runs["hang"]["promises"]}
    assert hang["billed_within_bound"]["broken"] == 1, runs["hang"]
    assert code == 1
    assert "--config" in runs["hang"]["command"] and "--model drill-primary" in \
        runs["hang"]["command"]
