"""A LiteLLM config.yaml as the provider source: read, certified, gated and exported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.domain.errors import ConfigError
from harness.gateways.litellm_config import read_litellm_config
from harness.gateways.source import GatewayProviders, load_litellm_providers
from harness.gateways.sources import load_source
from harness.providers.fake_server import FakeServer
from tests.gateways.conftest import KEY_ENV, QUIET, LiteLLMProject, deployment

CONFIG = """\
model_list:
  - model_name: triage
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: http://127.0.0.1:9/v1
      api_key: os.environ/OPENAI_KEY_FOR_TRIAGE
      temperature: 0
      max_tokens: 512
      seed: 7
      timeout: 10
  - model_name: triage-fallback
    litellm_params:
      model: anthropic/claude-3-5-haiku-20241022
      api_key: os.environ/ANTHROPIC_KEY
      temperature: 0
    model_info: {max_input_tokens: 200000}
  - model_name: long
    litellm_params: {model: gpt-4.1, api_key: os.environ/OPENAI_KEY_FOR_TRIAGE}
router_settings:
  fallbacks:
    - triage: [triage-fallback]
  context_window_fallbacks: [{triage: [long]}]
litellm_settings:
  content_policy_fallbacks: [{triage-fallback: [long]}]
  drop_params: true
"""


def test_reads_deployments_and_every_fallback_list(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    config = read_litellm_config(path)
    first = config.deployments[0]
    assert (first.group, first.model, first.api_base) == (
        "triage", "openai/gpt-4o-mini", "http://127.0.0.1:9/v1")
    assert first.api_key_env == "OPENAI_KEY_FOR_TRIAGE" and not first.api_key_literal
    assert first.params == {"temperature": 0, "max_tokens": 512, "seed": 7, "timeout": 10}
    kinds = [(e.section, e.kind, e.group, e.fallbacks) for e in config.fallbacks]
    assert kinds == [
        ("router_settings", "fallbacks", "triage", ("triage-fallback",)),
        ("router_settings", "context_window_fallbacks", "triage", ("long",)),
        ("litellm_settings", "content_policy_fallbacks", "triage-fallback", ("long",)),
    ]
    assert config.fallbacks[0].lines == (21,)
    assert config.settings == {"drop_params": True}


def test_deployments_become_providers_and_fallbacks_chains(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    providers, _ = load_source(f"litellm:{path}", contract_map={"triage": "ticket_triage"})
    assert isinstance(providers, GatewayProviders)
    triage = providers.providers["triage"]
    assert (triage.kind, triage.base_url, triage.model) == (
        "openai-chat", "http://127.0.0.1:9/v1", "gpt-4o-mini")
    assert triage.api_key_env == "OPENAI_KEY_FOR_TRIAGE"  # the name; no key was read
    assert (triage.temperature, triage.max_output_tokens, triage.timeout.read) == (0, 512, 10)
    fallback = providers.providers["triage-fallback"]
    assert (fallback.kind, fallback.base_url, fallback.context_window) == (
        "anthropic-messages", "https://api.anthropic.com", 200000)
    long = providers.providers["long"]
    assert long.temperature == 1.0  # none set: the provider's default applies, not ours
    # triage's chain: itself, its fallbacks, and what its fallback falls back to
    assert [link.provider for link in providers.chains["ticket_triage"]] == [
        "triage", "triage-fallback", "long"]
    assert all(link.failover == "auto" for link in providers.chains["ticket_triage"])


def test_detected_by_shape_without_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(CONFIG)
    (tmp_path / "failover-harness.yaml").write_text("contracts: {triage-fallback: ticket_triage}\n")
    providers, _ = load_source(path)
    assert isinstance(providers, GatewayProviders)
    assert [link.provider for link in providers.chains["ticket_triage"]] == [
        "triage-fallback", "long"]


def test_the_hash_binds_to_the_effective_config(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    mapping = {"triage": "ticket_triage"}
    before = load_litellm_providers(path, contract_map=mapping).providers["triage"]
    same = load_litellm_providers(
        path, contract_map=mapping, via="http://127.0.0.1:4000").providers["triage"]
    assert same.config_hash() == before.config_hash()  # how it is reached is not what it is
    assert same.base_url == "http://127.0.0.1:4000" and same.model == "triage"
    for old, new in [("seed: 7", "seed: 8"), ("timeout: 10", "timeout: 20"),
                     ("drop_params: true", "drop_params: false")]:
        path.write_text(CONFIG.replace(old, new))
        after = load_litellm_providers(path, contract_map=mapping).providers["triage"]
        changed = after.config_hash() != before.config_hash()
        assert changed is (old != "timeout: 10"), old  # timeouts say when, not what


@pytest.mark.parametrize(("old", "new", "line", "words"), [
    ("[triage-fallback]", "[triage-fallbak]", 21, "'triage-fallbak' of 'triage' is no model_name"),
    ("triage: [triage-fallback]", "triage: triage-fallback", 21,
     "the fallbacks of 'triage' are the string 'triage-fallback', not a list"),  # QA Q11
    ("drop_params: true", "drop_params: true\n  default_fallbacks: triage", 26,
     "`default_fallbacks` is the string 'triage', not a list"),
    ("api_key: os.environ/ANTHROPIC_KEY", "api_key: sk-ant-REALKEY123", 14,
     "API key written in the file"),
    ("model: anthropic/claude", "model: bedrock/claude", 13, "does not speak directly"),
    ("temperature: 0\n    model_info", "temperature: 5\n    model_info", 15, "temperature"),
])
def test_errors_name_the_litellm_file_and_line(
    tmp_path: Path, old: str, new: str, line: int, words: str
) -> None:
    path = tmp_path / "config.yaml"
    assert old in CONFIG
    path.write_text(CONFIG.replace(old, new))
    with pytest.raises(ConfigError) as info:
        load_litellm_providers(path, contract_map={"triage": "ticket_triage"})
    err = info.value
    assert (err.file, err.line) == (str(path), line), err.message
    assert words in err.message
    if "a string, not a list" in words:
        assert err.fix in ("write triage: [triage-fallback]", "write default_fallbacks: [triage]")
    assert "REALKEY" not in str(err.to_problem())


def test_a_contract_map_is_required_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    with pytest.raises(ConfigError, match="no model group is mapped"):
        load_litellm_providers(path)
    with pytest.raises(ConfigError, match="'nope'"):
        load_litellm_providers(path, contract_map={"nope": "ticket_triage"})


def _two_deployments(project: LiteLLMProject, fakes: dict[str, FakeServer],
                     extra: list[dict] | None = None, fallbacks: list[str] | None = None) -> Path:
    return project.write(
        [deployment("triage", "openai/gpt-4o-mini", f"{fakes['openai'].url}/v1"),
         deployment("triage-fallback", "anthropic/claude-3-5-haiku", fakes["anthropic"].url,
                    max_tokens=512),
         *(extra or [])],
        {"triage": fallbacks or ["triage-fallback"]},
        contracts={"triage": "ticket_triage"},
    )


def test_certified_and_gated_with_no_providers_yaml(
    litellm_project: LiteLLMProject, golden_fakes: dict[str, FakeServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = litellm_project
    config = _two_deployments(project, golden_fakes)
    assert not (project.root / "providers.yaml").exists()
    assert project.cli("gate", "--providers", f"litellm:{config}") == 3  # nothing certified yet
    assert project.cli("certify", "--providers", f"litellm:{config}", *QUIET) == 0
    lock = json.loads(project.lock.read_text())
    assert {c["provider"] for c in lock["certifications"]} == {"triage", "triage-fallback"}
    assert all(c["verdict"] == "eligible" for c in lock["certifications"])
    capsys.readouterr()
    assert project.cli("gate", "--providers", str(config)) == 0
    assert "2 auto links certified" in capsys.readouterr().out
    assert project.cli("export", "litellm-fallbacks", "--providers", str(config)) == 0
    assert yaml.safe_load(capsys.readouterr().out) == {
        "router_settings": {"fallbacks": [{"triage": ["triage-fallback"]}]}}

    # An uncertified deployment added to the fallback list: not yet certified → 3, at its line.
    cheap = deployment("cheap", "openai/cheap-model", f"{golden_fakes['hallucinating'].url}/v1")
    _two_deployments(project, golden_fakes, [cheap], ["triage-fallback", "cheap"])
    assert project.cli("gate", "--providers", str(config)) == 3
    out = capsys.readouterr().out
    where = f"{config}:{project.line_of('- cheap')} (router_settings.fallbacks[0].triage[1])"
    assert f"MISSING: provider 'cheap', contract 'ticket_triage': {where}" in out
    assert project.cli("export", "litellm-fallbacks", "--providers", str(config)) == 1
    exported = capsys.readouterr().out
    assert f"dropped 'cheap' from the fallbacks of 'triage' at {where}" in exported
    assert yaml.safe_load(exported) == {
        "router_settings": {"fallbacks": [{"triage": ["triage-fallback"]}]}}

    # Certified, and it turns out ineligible (it adds a key the schema does not name) → 1.
    assert project.cli("certify", "--providers", str(config), "--provider", "cheap",
                       *QUIET) == 1
    certified = capsys.readouterr().out
    assert project.cli("gate", "--providers", str(config)) == 1
    out = capsys.readouterr().out
    assert f"FAILED: provider 'cheap', contract 'ticket_triage': {where}: certified ineligible" \
        in out
    # The fix speaks LiteLLM: a LiteLLM link has no 'failover: manual' (every link is auto).
    params = f"{config}:{project.line_of('model: openai/cheap-model') - 1}"
    for text in (certified, out):
        assert "failover: manual" not in text
        assert (f"fix: make the provider meet the contract (deployment 'cheap': its "
                f"litellm_params at {params} (model_list[2].litellm_params)") in text
        assert f"or take 'cheap' out of the fallback list at {where}" in text


def test_a_changed_deployment_is_stale(
    litellm_project: LiteLLMProject, golden_fakes: dict[str, FakeServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = litellm_project
    config = _two_deployments(project, golden_fakes)
    assert project.cli("certify", "--providers", str(config), *QUIET) == 0
    project.write(
        [deployment("triage", "openai/gpt-4o-mini", f"{golden_fakes['openai'].url}/v1"),
         deployment("triage-fallback", "anthropic/claude-3-5-haiku", golden_fakes["anthropic"].url,
                    max_tokens=512, top_p=0.5)],
        {"triage": ["triage-fallback"]})
    capsys.readouterr()
    assert project.cli("gate", "--providers", str(config)) == 3
    out = capsys.readouterr().out
    assert "STALE: provider 'triage-fallback'" in out and "top_p" in out


def test_contract_map_flag(litellm_project: LiteLLMProject, golden_fakes: dict[str, FakeServer],
                           capsys: pytest.CaptureFixture[str]) -> None:
    project = litellm_project
    config = _two_deployments(project, golden_fakes)
    (project.root / "failover-harness.yaml").unlink()
    assert project.cli("gate", "--providers", str(config)) == 2
    assert "no model group is mapped" in capsys.readouterr().err
    assert project.cli("gate", "--providers", str(config),
                       "--contract-map", "triage=ticket_triage") == 3
    assert project.cli("gate", "--providers", str(config), "--contract-map", "triage") == 2
    assert project.cli("gate", "--providers", str(config),
                       "--contract-map", "triage=nope") == 2
    assert "has no folder" in capsys.readouterr().err
    assert KEY_ENV  # the key variable is set by the fixture; no value is ever printed


def test_check_runs_on_a_litellm_config(
    litellm_project: LiteLLMProject, golden_fakes: dict[str, FakeServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = litellm_project
    config = _two_deployments(project, golden_fakes)
    assert project.cli("certify", "--providers", str(config), *QUIET) == 0
    scenarios = Path(__file__).resolve().parents[2] / "scenarios"
    capsys.readouterr()
    code = project.cli("check", "--providers", f"litellm:{config}", "--no-certify",
                       "--scenarios", str(scenarios), "--report-dir", str(project.root / "r"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gate: ok — 2 auto links certified" in out


def test_several_deployments_in_one_group(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model_list:\n"
        "  - model_name: g\n"
        "    litellm_params: {model: openai/a, api_base: 'http://127.0.0.1:9/v1', temperature: 0}\n"
        "  - model_name: g\n"
        "    litellm_params: {model: openai/b, api_base: 'http://127.0.0.1:8/v1', temperature: 0}\n"
        "  - model_name: h\n"
        "    litellm_params: {model: openai/c, temperature: 0}\n"
        "    model_info: {id: h-east}\n"
        "  - model_name: h\n"
        "    litellm_params: {model: openai/d, temperature: 0}\n"
        "    model_info: {id: h-west}\n"
        "router_settings: {fallbacks: [{g: [h]}]}\n")
    direct = load_litellm_providers(path, contract_map={"g": "ticket_triage"})
    assert [link.provider for link in direct.chains["ticket_triage"]] == [
        "g.1", "g.2", "h-east", "h-west"]  # load-balanced peers are auto links too
    # through the gateway, a group's deployments must be told apart: by their model_info.id
    with pytest.raises(ConfigError, match="could be answered by any of them") as info:
        load_litellm_providers(path, contract_map={"g": "ticket_triage"},
                               via="http://127.0.0.1:4000")
    assert info.value.line == 2
    path.write_text(path.read_text().replace("temperature: 0}\n  - model_name: g",
                                             "temperature: 0}\n    model_info: {id: g-a}\n"
                                             "  - model_name: g").replace(
        "'http://127.0.0.1:8/v1', temperature: 0}", "'http://127.0.0.1:8/v1', temperature: 0}\n"
        "    model_info: {id: g-b}"))
    direct = load_litellm_providers(path, contract_map={"g": "ticket_triage"})
    via = load_litellm_providers(path, contract_map={"g": "ticket_triage"},
                                 via="http://127.0.0.1:4000")
    assert [via.providers[p].model for p in ("g-a", "g-b", "h-east")] == ["g-a", "g-b", "h-east"]
    assert all(via.providers[p].config_hash() == direct.providers[p].config_hash()
               for p in direct.providers)


def test_export_when_every_fallback_is_dropped_prints_an_empty_list(
    litellm_project: LiteLLMProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing certified: the export is still something to paste (QA Q14), not only comments."""
    project = litellm_project
    config = project.write(
        [deployment("triage", "openai/gpt-4o-mini", "http://127.0.0.1:9/v1"),
         deployment("cheap", "openai/cheap-model", "http://127.0.0.1:10/v1")],
        {"triage": ["cheap"]}, contracts={"triage": "ticket_triage"},
        litellm_settings={"context_window_fallbacks": [{"triage": ["cheap"]}]},
    )
    assert project.cli("export", "litellm-fallbacks", "--providers", str(config)) == 1
    out = capsys.readouterr().out
    assert "# dropped 'cheap' from the fallbacks of 'triage'" in out
    assert yaml.safe_load(out) == {  # pasted over the config's lists: no fallback stays
        "router_settings": {"fallbacks": []},
        "litellm_settings": {"context_window_fallbacks": []},
    }


def test_a_missing_key_variable_names_the_litellm_line(
    litellm_project: LiteLLMProject, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not `providers.triage.api_key_env` (no such file): the LiteLLM line that names it."""
    project = litellm_project
    monkeypatch.delenv(KEY_ENV)
    config = project.write(
        [deployment("triage", "openai/gpt-4o-mini", "http://127.0.0.1:9/v1"),
         deployment("triage-fallback", "anthropic/claude-3-5-haiku", "http://127.0.0.1:10")],
        {"triage": ["triage-fallback"]}, contracts={"triage": "ticket_triage"})
    assert project.cli("certify", "--providers", str(config), *QUIET) == 2
    err = capsys.readouterr().err
    line = project.line_of(f"api_key: os.environ/{KEY_ENV}")
    assert (f"error: {config}:{line} (model_list[0].litellm_params.api_key): environment "
            f"variable {KEY_ENV} is not set: deployment 'triage' reads its key from it") in err
    assert f"fix: export {KEY_ENV}=<your key> before running" in err
    assert "providers.triage" not in err
    assert not project.lock.exists()
