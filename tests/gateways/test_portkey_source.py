"""The Portkey reader (no gateway needed): nested targets, inheritance, roles, the per-target
routing header, the neutral upstream shape a drill consumes, and the certified export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.domain.errors import ConfigError
from harness.gateways.portkey_export import certified_targets
from harness.gateways.portkey_source import PortkeySource, load_portkey_providers, upstreams

CONFIG = {
    "strategy": {"mode": "fallback", "on_status_codes": [429, 503]},
    "retry": {"attempts": 2},
    "request_timeout": 20000,
    "override_params": {"temperature": 0},
    "targets": [
        {"provider": "openai", "custom_host": "http://127.0.0.1:9/v1",
         "override_params": {"model": "gpt-4o-mini"}},
        {"strategy": {"mode": "loadbalance"}, "request_timeout": 5000, "targets": [
            {"provider": "openai", "weight": 0.7, "override_params": {"model": "gpt-4.1-mini"}},
            {"provider": "anthropic", "weight": 0.3, "custom_host": "http://127.0.0.1:8/v1",
             "override_params": {"model": "claude-3-5-haiku-20241022", "temperature": 0.2}}]},
    ],
}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "route.json"
    path.write_text(json.dumps(CONFIG, indent=2))
    (tmp_path / "failover-harness.yaml").write_text("contracts: {route: ticket_triage}\n")
    return path


def test_targets_become_a_chain_in_the_gateways_order(config: Path) -> None:
    providers = load_portkey_providers(config)
    chain = [link.provider for link in providers.chains["ticket_triage"]]
    assert chain == ["openai-gpt-4o-mini", "openai-gpt-4.1-mini",
                     "anthropic-claude-3-5-haiku-20241022"]
    anthropic = providers.providers["anthropic-claude-3-5-haiku-20241022"]
    # direct: what Portkey would send it (own override wins over the inherited one)
    assert (anthropic.kind, anthropic.base_url, anthropic.temperature) == (
        "anthropic-messages", "http://127.0.0.1:8", 0.2)
    assert anthropic.timeout.read == 5.0  # the nested group's request_timeout
    source = providers.portkey
    assert isinstance(source, PortkeySource)
    roles = {u["provider"]: (u["role"], u["order"], u["weight"]) for u in upstreams(source)}
    assert roles == {"openai-gpt-4o-mini": ("primary", 0, None),
                     "openai-gpt-4.1-mini": ("loadbalance", 1, 0.7),
                     "anthropic-claude-3-5-haiku-20241022": ("loadbalance", 2, 0.3)}


def test_through_the_gateway_each_target_is_routed_alone(config: Path) -> None:
    providers = load_portkey_providers(config, via="http://127.0.0.1:8787/v1")
    direct = load_portkey_providers(config)
    cfg = providers.providers["openai-gpt-4.1-mini"]
    assert (cfg.base_url, cfg.via, cfg.kind) == ("http://127.0.0.1:8787/v1",
                                                 "http://127.0.0.1:8787/v1", "openai-chat")
    route = json.loads(cfg.headers["x-portkey-config"])
    assert route == {"provider": "openai", "request_timeout": 5000, "api_key": "${OPENAI_API_KEY}",
                     "override_params": {"temperature": 0, "model": "gpt-4.1-mini"},
                     "retry": {"attempts": 2}}
    # the certification binds the target, not the road to it
    for pid in providers.providers:
        assert providers.providers[pid].config_hash() == direct.providers[pid].config_hash()


def test_an_unmapped_config_names_its_key(config: Path) -> None:
    (config.parent / "failover-harness.yaml").write_text("contracts: {other: ticket_triage}\n")
    with pytest.raises(ConfigError, match="its key is the file's name, 'route'") as raised:
        load_portkey_providers(config)
    assert "contracts: {route: <contract id>}" in str(raised.value.fix)


def test_the_export_drops_uncertified_targets_and_an_emptied_group(config: Path) -> None:
    providers = load_portkey_providers(config)
    source = providers.portkey
    assert source is not None
    result = certified_targets(source, lambda provider, contract: (
        provider == "openai-gpt-4o-mini", "missing: not certified"))
    assert result.differs and len(result.dropped) == 2
    assert [t.get("provider") for t in result.config["targets"]] == ["openai"]  # group gone
    assert "route.json:" in result.dropped[0] and "missing: not certified" in result.dropped[0]
