"""One engine for Portkey too: `drill --gateway URL --config portkey:config.json` fills in the
drill profile from the Portkey config (its targets on their custom_host ports, the config sent
in ``x-portkey-config``), and `--header NAME:VALUE` adds a header to a chat profile's calls;
both through the real gateway (@portkey-ai/gateway 1.15.2 on node)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests import _cli
from tests.drill.conftest import ROOT
from tests.drill.test_gateway_drills import Ports, drill_gateway, portkey_config, rates
from tests.gateways.conftest import copy_contract
from tests.gateways.portkey_gateway import PortkeyGateway

pytestmark = pytest.mark.slow


def _runs(report: Path) -> dict[str, dict[str, Any]]:
    events = json.loads((report / "latest" / "results.json").read_text("utf-8"))["events"]
    return {e["drill"]: e for e in events if e["type"] == "drill_run"}


@pytest.mark.parametrize("spelling", ["portkey:", ""])  # the prefix, or detection by shape
def test_drill_a_portkey_config(portkey: PortkeyGateway, tmp_path: Path, spelling: str) -> None:
    ports = Ports()
    config = tmp_path / "route.json"
    config.write_text(json.dumps(json.loads(portkey_config(ports)), indent=2), encoding="utf-8")
    report = tmp_path / "report"
    done = _cli.run(
        ["drill", "--gateway", portkey.url, "--config",
         f"{spelling}{config}", "--drills", "control,overload-429,hang", "--trials", "2",
         "--report-dir", str(report)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600, cwd=ROOT)
    out = done.stdout + done.stderr
    runs = _runs(report)
    assert runs["control"]["verdict"] == "passed", out
    assert runs["control"]["provider_calls"] == runs["control"]["billed_calls"] == 2, out
    # a refusal fails over to the fallback target: one billed call, the bound the drill sets
    assert runs["overload-429"]["verdict"] == "passed", out
    assert runs["overload-429"]["provider_calls"] == 4, out
    # a hang: Portkey abandons the primary after request_timeout (billed), then the fallback
    hang = {p["promise"]: p for p in runs["hang"]["promises"]}
    assert hang["billed_within_bound"]["broken"] == 2 and runs["hang"]["billed_calls"] == 4, out
    assert done.returncode == 1, out
    details = json.loads((report / "latest" / "drill.json").read_text("utf-8"))
    first = details["drills"]["overload-429"][0]
    assert first["calls"] == {"openai": 1, "openai-2": 1}, first  # the targets, in order
    assert first["answered_by"] == "openai-2 (its signed answer)", first
    assert "sk-drill-test-not-a-secret" not in out  # the config's key is never shown


def test_drill_a_portkey_config_off_loopback(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "route.json"
    config.write_text('{\n  "strategy": {"mode": "fallback"},\n  "targets": [\n'
                      '    {"provider": "openai", "api_key": "sk-x",\n'
                      '     "custom_host": "https://api.openai.com/v1"}\n  ]\n}\n',
                      encoding="utf-8")
    assert main(["drill", "--gateway", "http://127.0.0.1:9/v1", "--config",
                 f"portkey:{config}"]) == 2
    err = capsys.readouterr().err
    assert f"{config}:5" in err and "loopback" in err and "fix:" in err, err


def test_header_option_reaches_the_gateway(portkey: PortkeyGateway, tmp_path: Path) -> None:
    """Without the header Portkey refuses every call (unknown, exit 3); `--header` with a
    ${VAR} value sends it, and the re-drill command shows only the variable."""
    ports = Ports()
    env = {"PORTKEY_CONFIG": portkey_config(ports)}
    code, runs, out = drill_gateway(tmp_path, portkey.url.removesuffix("/v1"), ports, "bare",
                                    {}, env, drills="control")
    assert code == 3 and runs["control"]["verdict"] == "unknown", out
    code, runs, out = drill_gateway(tmp_path, portkey.url.removesuffix("/v1"), ports, "hdr",
                                    {}, env, drills="control,overload-429",
                                    extra=["--header", "x-portkey-config: ${PORTKEY_CONFIG}"])
    assert code == 0, out
    assert rates(runs["control"])["completed"] == (3, 0, 0), out
    assert "x-portkey-config: '${PORTKEY_CONFIG}'" in runs["control"]["command"] or \
        "'x-portkey-config: ${PORTKEY_CONFIG}'" in runs["control"]["command"], runs["control"]


def test_portkey_fallback_judged_against_the_lock(portkey: PortkeyGateway, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The config serves a contract (``--contract-map route=ID``): the fallback that answered
    is judged against the lock; an empty lock certifies nothing, so reaching it is a
    violation naming the target."""
    copy_contract(tmp_path)
    ports = Ports()
    config = tmp_path / "route.json"
    config.write_text(portkey_config(ports), encoding="utf-8")
    code = main(["drill", "--gateway", portkey.url, "--config", f"portkey:{config}",
                 "--contract-map", "route=ticket_triage", "--contracts",
                 str(tmp_path / "contracts"), "--lock", str(tmp_path / "empty.lock.json"),
                 "--drills", "overload-429", "--trials", "1", "--report-dir", str(tmp_path / "r"),
                 "--json"])  # one intent (the default is 10 since issue 29)
    runs = {e["drill"]: e for e in json.loads(capsys.readouterr().out)["events"]
            if e["type"] == "drill_run"}
    assert code == 1
    fallback = rates(runs["overload-429"])["fallback_certified"]
    assert fallback == (0, 1, 0), runs["overload-429"]
    (intent,) = runs["overload-429"]["intents"]
    finding = next(f for f in intent["findings"] if f["promise"] == "fallback_certified")
    assert finding["message"].startswith("openai-2: missing"), finding
    assert "--contract-map route=ticket_triage" in runs["overload-429"]["command"]
