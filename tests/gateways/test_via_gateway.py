"""Certification through a real LiteLLM proxy: client → gateway (by model group) → fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.contracts.certifier import UNREACHED_STOP
from harness.contracts.records import FAKE_PROVENANCE
from tests.gateways.conftest import QUIET, Gateway
from tests.gateways.litellm_proxy import MASTER_KEY

pytestmark = pytest.mark.slow


@pytest.fixture
def via_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("LITELLM_MASTER_KEY", MASTER_KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "gateway.lock.json"


def test_a_conformant_provider_certifies_through_the_gateway(
    gateway: Gateway, via_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = via_env.parent / "reports"
    code = main(["certify", "--providers", f"litellm:{gateway.config}", "--via", gateway.url,
                 "--contract-map", "triage=ticket_triage", "--lock", str(via_env),
                 "--report-dir", str(reports / "certify"), *QUIET])
    out = capsys.readouterr().out
    assert code == 0, out
    records = {r["provider"]: r for r in json.loads(via_env.read_text())["certifications"]}
    assert set(records) == {"triage", "triage-fallback"}  # OpenAI → Anthropic translation too
    for record in records.values():
        assert record["verdict"] == "eligible", record
        gateway_check = next(c for c in record["checks"] if c["name"] == "gateway")
        assert gateway_check["passed"] and gateway_check["figures"]["observed"] >= 1
        # the fakes answer from the golden file and say so; LiteLLM forwards that header as
        # llm_provider-x-fake-answers: the demo stays honest through the gateway
        assert record["provenance"] == FAKE_PROVENANCE, record
    # the lock binds the deployment, not the road to it: a direct gate agrees
    assert main(["gate", "--providers", str(gateway.config), "--contract-map",
                 "triage=ticket_triage", "--lock", str(via_env),
                 "--report-dir", str(reports / "gate")]) == 0
    out += capsys.readouterr().out
    # every rendering says which eligible links are fakes
    assert out.count(FAKE_PROVENANCE) >= 4, out  # certify: 2 records; gate: 2 links
    for name in ("summary.md", "results.json", "junit.xml", "index.html"):
        for command in ("certify", "gate"):
            text = next((reports / command).rglob(name)).read_text()
            assert FAKE_PROVENANCE in text, (command, name)


def test_a_gateway_that_drops_the_schema_is_named(
    gateway: Gateway, via_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["certify", "--providers", str(gateway.config), "--via", gateway.url,
                 "--contract-map", "droppy=ticket_triage", "--lock", str(via_env),
                 *QUIET])
    out = capsys.readouterr().out
    assert code == 1, out
    record = json.loads(via_env.read_text())["certifications"][0]
    assert (record["provider"], record["verdict"]) == ("droppy", "ineligible")
    check = next(c for c in record["checks"] if c["name"] == "gateway")
    assert not check["passed"] and check["figures"]["schema_dropped"] >= 1
    reason = check["evidence"][0]["reason"]
    assert f"the gateway ({gateway.url}) changed the request" in reason
    assert "the provider received no response_format" in reason


def test_a_temperature_above_the_contract_is_named_at_its_config_line(
    gateway: Gateway, via_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["certify", "--providers", str(gateway.config), "--via", gateway.url,
                 "--contract-map", "hot=ticket_triage", "--lock", str(via_env), *QUIET])
    out = capsys.readouterr().out
    assert code == 1, out
    record = json.loads(via_env.read_text())["certifications"][0]
    assert (record["provider"], record["verdict"]) == ("hot", "ineligible")
    check = next(c for c in record["checks"] if c["name"] == "gateway")
    reason = next(e["reason"] for e in check["evidence"] if "temperature" in e["reason"])
    assert f"the gateway ({gateway.url})" in reason
    assert "received temperature 0.9" in reason and "at most 0.3" in reason
    lines = gateway.config.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "model_name: hot" in line)
    line = next(n for n, text in enumerate(lines[index:], start=index + 1)
                if "temperature: 0.9" in text)
    assert f"config.yaml:{line} (model_list[6].litellm_params.temperature)" in reason


def test_a_providers_yaml_whose_base_url_is_the_gateway(
    gateway: Gateway, via_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plain way: providers.yaml entries pointing at the proxy, one per model group."""
    import yaml

    def through(group: str) -> dict:
        return {"kind": "openai-chat", "base_url": gateway.url, "model": group,
                "api_key_env": "LITELLM_MASTER_KEY", "temperature": 0, "max_output_tokens": 512,
                "tokenizer": "tiktoken:cl100k_base", "context_window": 128000}

    root = via_env.parent
    (root / "contracts").symlink_to(gateway.root / "contracts")
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "version": 1,
        "providers": {"primary": through("triage"), "fallback": through("triage-fallback")},
        "chains": {"ticket_triage": [{"provider": "primary"}, {"provider": "fallback"}]},
    }))
    code = main(["certify", "--providers", str(providers), *QUIET])
    assert code == 0, capsys.readouterr().out  # OpenAI → Anthropic translation included
    assert main(["gate", "--providers", str(providers)]) == 0


def test_a_gateway_that_cannot_reach_the_provider_is_unknown_not_ineligible(
    gateway: Gateway, via_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LiteLLM answers 500 "Connection error" when the deployment's api_base does not answer:
    no sample reached a model, so no verdict (QA Q3); a few calls, not the whole plan."""
    code = main(["certify", "--providers", str(gateway.config), "--via", gateway.url,
                 "--contract-map", "nowhere=ticket_triage", "--lock", str(via_env), *QUIET])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "INELIGIBLE" not in out
    assert "could not reach 'nowhere'" in out
    assert "the gateway could not connect to the provider" in out
    line = next(n for n, text in enumerate(gateway.config.read_text().splitlines(), 1)
                if "model_name: nowhere" in text) + 3  # its api_base
    assert (f"fix: make the provider reachable (network, base_url, API key): check that the "
            f"gateway at {gateway.url} can reach the provider: the network "
            f"and api_base at {gateway.config}:{line} (model_list[5].litellm_params.api_base)"
            ) in out
    assert f"{UNREACHED_STOP} calls in" in out
    (record,) = json.loads(via_env.read_text())["certifications"]  # the lock had none
    assert record["verdict"] == "undecided" and record["unreached"].startswith(
        "could not reach 'nowhere'")
    assert not any(c["name"] == "gateway" for c in record["checks"])  # nothing to compare


def test_a_key_the_gateway_refuses_is_unknown_with_the_key_to_check(
    gateway: Gateway, via_env: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-not-the-master-key")
    code = main(["certify", "--providers", str(gateway.config), "--via", gateway.url,
                 "--contract-map", "triage=ticket_triage", "--lock", str(via_env), *QUIET])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "INELIGIBLE" not in out and "sk-not-the-master-key" not in out
    assert "the gateway refused the key" in out
    assert (f"check that the gateway runs at {gateway.url} and accepts the key in "
            "$LITELLM_MASTER_KEY") in out
    assert f"{2 * UNREACHED_STOP} calls in" in out  # two deployments, a few calls each
