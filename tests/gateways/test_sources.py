"""Which source a --providers file is, headers from providers.yaml / failover-harness.yaml /
--header, and a gateway's own refusal classified as unreached."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.contracts.exchange import gateway_refusal
from harness.domain.errors import ConfigError
from harness.gateways.source import parse_headers
from harness.gateways.sources import load_source, source_kind
from harness.providers.classify import ProviderCallError
from harness.providers.config import ProviderConfig

PROVIDER = {"kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
            "api_key_env": "K", "tokenizer": "tiktoken:cl100k_base", "context_window": 8000}


def write_providers(root: Path, **extra: object) -> Path:
    path = root / "providers.yaml"
    path.write_text(yaml.safe_dump({"providers": {"p": {**PROVIDER, **extra}},
                                    "chains": {"c": [{"provider": "p"}]}}))
    return path


def test_headers_from_the_project_file_and_the_command_line(tmp_path: Path) -> None:
    path = write_providers(tmp_path, headers={"x-team": "billing", "x-route": "a"})
    (tmp_path / "failover-harness.yaml").write_text("headers: {x-route: b, x-env: '${ENV_X}'}\n")
    providers, _ = load_source(path, headers=parse_headers(["x-route: c"]))
    assert providers.providers["p"].headers == {"x-team": "billing", "x-route": "c",
                                                "x-env": "${ENV_X}"}


def test_header_values_read_variables_and_a_missing_one_names_the_header() -> None:
    cfg = ProviderConfig.model_validate({"id": "p", **PROVIDER,
                                         "headers": {"x-portkey-config": "${ROUTE_X}"}})
    assert cfg.header_values({"ROUTE_X": '{"provider":"openai"}'}) == {
        "x-portkey-config": '{"provider":"openai"}'}
    with pytest.raises(ConfigError, match=r"ROUTE_X is not set .*header 'x-portkey-config'"):
        cfg.header_values({})
    assert cfg.hashed_fields()["headers"] == {"x-portkey-config": "${ROUTE_X}"}  # no value


def test_a_key_in_headers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="carries the key"):
        ProviderConfig.model_validate({"id": "p", **PROVIDER,
                                       "headers": {"Authorization": "Bearer x"}})


@pytest.mark.parametrize(("name", "text", "kind"), [
    ("config.yaml", "model_list: []\n", "litellm"),
    ("config.json", '{"targets": [], "strategy": {"mode": "fallback"}}', "portkey"),
    ("p.yaml", "providers: {}\n", "providers"),
])
def test_sources_are_told_apart_by_shape(tmp_path: Path, name: str, text: str,
                                         kind: str) -> None:
    (tmp_path / name).write_text(text)
    assert source_kind(tmp_path / name)[0] == kind


def test_an_unknown_gateway_prefix_names_the_known_sources() -> None:
    with pytest.raises(ConfigError) as raised:
        source_kind("kong:kong.yaml")
    text = str(raised.value)
    assert "LiteLLM" in text and "Portkey" in text and "base_url" in text


def test_a_gateway_refusal_is_unreached_but_a_provider_error_is_not() -> None:
    through = ProviderConfig.model_validate({"id": "p", **PROVIDER, "via": "http://gw"})
    direct = ProviderConfig.model_validate({"id": "p", **PROVIDER})

    def error(status: int, message: str) -> ProviderCallError:
        return ProviderCallError(f"p: HTTP {status}: {message}", classification="failed",
                                 provider_id="p", status=status)

    refused = error(400, '{"status":"failure","message":"Either x-portkey-config or '
                         'x-portkey-provider header is required"}')
    assert gateway_refusal(through, refused) == (
        "the gateway refused the request (HTTP 400: Either x-portkey-config or "
        "x-portkey-provider header is required)")
    assert gateway_refusal(direct, refused) == ""  # no gateway: the provider's own answer
    assert gateway_refusal(through, error(400, "response_format is not supported")) == ""
    assert gateway_refusal(through, error(429, "rate limited by the router config")) == ""
