"""`drill --gateway` against a real LiteLLM proxy: the drill engine, counted at its fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer
from tests.gateways.conftest import QUIET, Gateway
from tests.gateways.litellm_proxy import MASTER_KEY

pytestmark = pytest.mark.slow
MAP = "drill-primary=ticket_triage"
OLD_DRILLS = ("hang", "late", "overload-429", "overload-529", "reset", "stream-cut")


def _certify_fallback(gateway: Gateway, lock: Path) -> None:
    """Certify drill-fallback directly (fakes briefly on the drill's ports; no gateway)."""
    contract = load_contracts(gateway.root / "contracts")["ticket_triage"]
    servers = [FakeServer(FakeProvider("openai-chat", answer=golden_answer(contract)),
                          port=port) for port in gateway.drill_ports.values()]
    for server in servers:
        server.start()
    try:
        assert main(["certify", "--providers", str(gateway.config), "--contract-map", MAP,
                     "--provider", "drill-fallback", "--lock", str(lock), *QUIET,
                     "--report-dir", str(lock.parent / "reports")]) == 0
    finally:
        for server in servers:
            server.stop()


def test_every_drill_through_the_real_gateway(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--gateway`` is a spelling of the engine's ``--target``: one drill_run per drill, and
    drill.json keeps every request's counts (who answered, keys on retries, billed calls)."""
    monkeypatch.setenv("LITELLM_MASTER_KEY", MASTER_KEY)
    monkeypatch.chdir(tmp_path)
    lock = tmp_path / "drill.lock.json"
    _certify_fallback(gateway, lock)
    capsys.readouterr()
    reports = tmp_path / "reports"
    code = main(["drill", "--gateway", gateway.url, "--config", str(gateway.config),
                 "--model", "drill-primary", "--contract-map", MAP, "--lock", str(lock),
                 "--drills", ",".join(OLD_DRILLS), "--trials", "1", "--report-dir", str(reports),
                 "--json"])  # one intent per drill (the default is 10 since issue 29)
    results = json.loads(capsys.readouterr().out)
    runs = {e["drill"]: e for e in results["events"] if e["type"] == "drill_run"}
    verdicts = {name: r["verdict"] for name, r in runs.items()}
    assert verdicts == {
        "hang": "failed", "late": "failed", "overload-429": "passed", "overload-529": "passed",
        "reset": "failed", "stream-cut": "failed"}, (verdicts, [
            (r["drill"], r["unknowns"], [i["findings"] for i in r["intents"]])
            for r in runs.values()])
    assert code == 1  # LiteLLM retries a timed-out primary: billed twice or more
    assert "--drills hang" in runs["hang"]["command"] and "--lock" in runs["hang"]["command"]
    report = json.loads((reports / "latest" / "drill.json").read_text())
    assert list(report["drills"]) == list(OLD_DRILLS)
    for name, intents in report["drills"].items():
        (request,) = intents
        assert request["calls"].get("drill-primary", 0) >= 1, name  # the failure was scripted
        assert request["provider_calls"] == sum(request["calls"].values())
        assert request["client_wait_s"] > 0
        assert 0 <= request["retries_with_idempotency_key"] <= request["retries"]
    for name in ("hang", "late", "reset"):  # the primary took the request, then failed over
        (request,) = report["drills"][name]
        assert request["billed_completions"] >= 2, name
        assert request["findings"]["billed_within_bound"]["verdict"] == "broken"
        # LiteLLM names the deployment in x-litellm-model-api-base; the signature agrees
        assert request["answered_by"] == "drill-fallback (the gateway's answer header)", request
        assert request["findings"]["fallback_certified"]["verdict"] == "held"
    (late,) = report["drills"]["late"]
    assert set(late["outcomes"]["drill-primary"]) == {"late"}
    assert late["late_primary_answer"] == "billed, not delivered"
    assert set(report["drills"]["hang"][0]["outcomes"]["drill-primary"]) == {"abandoned"}
    assert set(report["drills"]["reset"][0]["outcomes"]["drill-primary"]) == {"reset"}
    for name in ("overload-429", "overload-529"):  # refused: nothing generated, nothing billed
        (request,) = report["drills"][name]
        assert set(request["outcomes"]["drill-primary"]) == {"refused"}
        assert request["billed_completions"] == 1
        assert request["findings"]["fallback_certified"]["verdict"] == "held"
    (cut,) = report["drills"]["stream-cut"]
    assert cut["stream_complete"] is False and "cut" in cut["outcomes"]["drill-primary"]
    # The client got a broken stream and no fallback was tried: never a PASS (QA Q17).
    assert cut["findings"]["completed"]["verdict"] == "broken"
    assert "failover did not happen" in cut["findings"]["completed"]["message"]

    # The same overload with a fallback that is not certified (an empty lock): a violation.
    empty = tmp_path / "empty.lock.json"
    code = main(["drill", "--gateway", gateway.url, "--config", str(gateway.config),
                 "--model", "drill-primary", "--contract-map", MAP, "--lock", str(empty),
                 "--drills", "overload-429", "--report-dir", str(reports)])
    out = capsys.readouterr()
    assert code == 1, out
    text = out.out + out.err
    assert "VIOLATED  drill overload-429 on" in text, text
    assert "drill-fallback: missing" in text, text


def test_a_drill_refuses_a_config_it_cannot_stand_in_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: g\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o-mini\n"
        "      api_base: https://api.openai.com/v1\n"
        "      timeout: 1\n")
    args = ["drill", "--gateway", "http://127.0.0.1:9", "--config", str(config), "--model", "g"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{config}:5" in err and "loopback" in err
    config.write_text(config.read_text().replace("https://api.openai.com/v1",
                                                 "http://127.0.0.1:9/v1").replace(
        "timeout: 1", "timeout: 600"))
    assert main(args) == 2
    assert "timeout: 1" in capsys.readouterr().err
    assert main([*args[:-1], "nope"]) == 2
    assert main(args[:-2]) == 2  # no --model: which groups there are
    assert "--model GROUP (one of: g)" in capsys.readouterr().err
    # an unknown drill is a config error (exit 2) with its fix, no longer argparse's exit
    assert main([*args, "--drills", "hang,explode"]) == 2
    err = capsys.readouterr().err
    assert "--drills: unknown drill(s) explode" in err, err
    assert "fix: --drills hang,late" in err, err
