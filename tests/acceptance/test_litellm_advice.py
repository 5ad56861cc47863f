"""Advice for a LiteLLM config: `export litellm-fallbacks` prints a list whose every fallback
was dropped as an empty list (`fallbacks: []`), so pasting the output over the config's lists
removes the uncertified ones (qa Q14: it printed only comments, and the old list stayed); and
the gate never tells a LiteLLM user to set 'failover: manual', which a gateway config lacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """\
model_list:
  - model_name: triage
    litellm_params: {model: openai/gpt-4o-mini, api_key: os.environ/QA_KEY, temperature: 0}
  - model_name: triage-fallback
    litellm_params: {model: openai/gpt-4o, api_key: os.environ/QA_KEY, temperature: 0}
  - model_name: summary
    litellm_params: {model: openai/gpt-4o-mini, api_key: os.environ/QA_KEY, temperature: 0}
  - model_name: summary-fallback
    litellm_params: {model: openai/gpt-4o, api_key: os.environ/QA_KEY, temperature: 0}
router_settings:
  fallbacks:
    - triage: [triage-fallback]
    - summary: [summary-fallback]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "config.yaml").write_text(CONFIG, "utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def exported(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, object]:
    code = main(["export", "litellm-fallbacks", "--providers", "config.yaml", *args])
    return code, yaml.safe_load(capsys.readouterr().out)


def test_a_list_whose_every_fallback_is_dropped_is_printed_empty(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lists = exported(capsys, "--contract-map", "triage=ticket_triage")
    assert code == 1  # nothing is certified: the fallback is dropped
    assert lists == {"router_settings": {"fallbacks": [{"summary": ["summary-fallback"]}]}}
    code, lists = exported(capsys, "--contract-map", "triage=ticket_triage",
                           "--contract-map", "summary=ticket_triage")
    assert code == 1
    assert lists == {"router_settings": {"fallbacks": []}}  # paste it: no fallback stays


def test_the_gate_never_advises_failover_manual_for_a_litellm_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A gateway fails over without asking: a LiteLLM config has no 'failover: manual' (qa Q3,
    g16's part). The fix for an ineligible deployment must not send the user looking for it."""
    from harness.providers.fake import FakeProvider
    from harness.providers.fake_server import FakeServer

    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    contract = tmp_path / "contracts" / "ticket_triage" / "contract.yaml"
    contract.write_text(contract.read_text().replace("samples: 3", "samples: 1"))
    monkeypatch.setenv("QA_KEY", "qa-litellm-key-0000")
    monkeypatch.chdir(tmp_path)
    with FakeServer(FakeProvider("openai-chat", "hallucinated-key")) as fake:
        (tmp_path / "config.yaml").write_text(CONFIG.replace(
            "litellm_params: {model: openai/gpt-4o, api_key",
            f"litellm_params: {{model: openai/gpt-4o, api_base: '{fake.url}/v1', api_key"),
            "utf-8")
        assert main(["certify", "--providers", "config.yaml", "--contract-map",
                     "triage=ticket_triage", "--provider", "triage-fallback",
                     "--no-progress"]) == 1
    capsys.readouterr()
    assert main(["gate", "--providers", "config.yaml", "--contract-map",
                 "triage=ticket_triage"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: provider 'triage-fallback'" in out, out
    assert "make the provider meet the contract" in out
    assert "failover: manual" not in out, out


def test_a_fallback_written_as_a_string_is_refused_at_its_line(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`- triage: triage-fallback` (no brackets): LiteLLM refuses to start with it ("Fallbacks
    for 'triage' must be a list of model names"), so the gate must not pass it as a list."""
    config = project / "config.yaml"
    config.write_text(CONFIG.replace("- triage: [triage-fallback]", "- triage: triage-fallback"),
                      "utf-8")
    assert main(["gate", "--providers", "config.yaml", "--contract-map",
                 "triage=ticket_triage"]) == 2
    err = capsys.readouterr().err
    line = CONFIG.splitlines().index("    - triage: [triage-fallback]") + 1
    assert f"config.yaml:{line} " in err and "must be a list of model names" in err, err
    assert "fix: write triage: [triage-fallback]" in err and "Traceback" not in err


def test_an_unreachable_deployment_without_api_base_names_the_default_endpoint(
        project: Path) -> None:
    """qa Q3b: the fix said "check the network and api_base at config.yaml:N
    (…litellm_params.api_base)" for a deployment that has no api_base; it names the endpoint
    LiteLLM uses instead. (The fix line itself, without calling any provider.)"""
    from harness.gateways.sources import open_workspace

    ws = open_workspace(project / "config.yaml", contract_map={"triage": "ticket_triage"})
    fix = ws.reach_fix("triage", "could not reach 'triage': DNS lookup failed", "CMD")
    assert "api_base (none set, so https://api.openai.com/v1) of " in fix, fix
    assert "config.yaml:3 (model_list[0].litellm_params)" in fix
    assert "litellm_params.api_base" not in fix
    assert "if there is one, stays in the lock file" in fix and fix.endswith("run: CMD")
