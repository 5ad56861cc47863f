"""Where each provider of a LiteLLM config came from: its deployment and the fallback list
that brought it into a chain, as file:line — the LiteLLM side of
:class:`~harness.providers.config.ProviderSource` (fixes and gate reasons in LiteLLM's terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.domain.errors import ConfigError
from harness.gateways.litellm_config import LiteLLMConfig, LiteLLMDeployment
from harness.yamlsrc import load_yaml

UPSTREAMS = {  # LiteLLM provider prefix -> (our wire format, the provider's default api_base)
    "openai": ("openai-chat", "https://api.openai.com/v1"),
    "anthropic": ("anthropic-messages", "https://api.anthropic.com"),
}
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True, slots=True)
class Origin:
    """Why a provider is in a contract's chain: its place in the LiteLLM file."""

    file: str
    line: int | None
    field: str
    group: str  # the fallback group (or the primary group) that brought it in

    def __str__(self) -> str:
        at = f"{self.file}:{self.line}" if self.line else self.file
        return f"{at} ({self.field})"


@dataclass
class GatewaySource:
    """What the LiteLLM file says beyond providers and chains: where each link came from (a
    :class:`~harness.providers.config.ProviderSource`)."""

    config: LiteLLMConfig
    contract_map: dict[str, str]  # group -> contract id
    map_origin: str  # where the mapping was read (file or --contract-map)
    via: str | None
    provider_ids: dict[int, str]  # model_list index -> provider id
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)  # (provider, contract)
    name: str = "LiteLLM"

    def deployments_of(self, group: str) -> list[str]:
        return [self.provider_ids[d.index] for d in self.config.groups()[group]]

    def missing_contract(self, contract: str, searched: Sequence[Path]) -> ConfigError:
        """The error for a mapped contract that has no folder in the contracts folder."""
        contracts_dir = next((d for d in searched if d.is_dir()), searched[0])
        groups = sorted(g for g, c in self.contract_map.items() if c == contract)
        in_file = self.map_origin != "--contract-map"
        line = load_yaml(Path(self.map_origin)).line_of(("contracts", groups[0])) if (
            in_file and groups) else None
        return ConfigError(
            f"model group {', '.join(map(repr, groups))} is mapped to contract {contract!r}, "
            f"which has no folder in {contracts_dir}",
            file=self.map_origin if in_file else None, line=line,
            field=f"contracts.{groups[0]}" if in_file and groups else "--contract-map",
            fix=f"create {contracts_dir / contract / 'contract.yaml'}, correct the mapping, or "
                "pass --contracts DIR",
        )

    def locate(self, standings: Sequence[Any]) -> list[Any]:
        """Standings whose reason starts with the LiteLLM file:line that brought the link in."""
        out = []
        for s in standings:
            origin = self.origins.get((s.provider, s.contract))
            if origin is None or s.eligible:
                out.append(s)
                continue
            fix = s.fix
            if str(s.state) == "failed":  # a LiteLLM link has no 'failover: manual'
                fix = self.ineligible_fix(s.provider, s.contract, s.command)
            elif origin.field.startswith(("router_settings", "litellm_settings")):
                fix += (f"; or take {origin.group!r} out of that list — 'failover-harness export "
                        "litellm-fallbacks' prints the lists that hold only certified fallbacks")
            out.append(replace(s, why=f"{origin}: {s.why}", fix=fix))
        return out

    def reach_hint(self, provider: str, setting: str) -> str | None:
        """What to check in the LiteLLM file when no call reached ``provider``."""
        d = self.deployment(provider)
        if d is None:
            return None
        if self.via and setting == "upstream":
            return (f"that the gateway at {self.via} can reach the provider: the network and "
                    f"api_base at {self.where(provider, 'api_base')}, as the gateway sees them")
        if self.via:
            return None  # the gateway itself: the generic advice names it
        param = {"key": "api_key", "model": "model"}.get(setting, "api_base")
        prefix = d.model.partition("/")[0] if "/" in d.model else (
            "anthropic" if d.model.startswith("claude") else "openai")
        env = d.api_key_env or DEFAULT_KEY_ENV.get(prefix, "")
        what = {"key": f"the key in ${env}",
                "model": "api_base and the model name"}.get(setting, "the network and api_base")
        if param == "api_base" and not d.api_base:
            # no api_base written: the provider's public API is meant (qa Q3b)
            public = UPSTREAMS.get(prefix, ("", "the provider's public API"))[1]
            return f"{what} (none set, so {public}) of {self.where(provider)}"
        return f"{what} at {self.where(provider, param)}"

    def deployment(self, provider: str) -> LiteLLMDeployment | None:
        return next((d for d in self.config.deployments
                     if self.provider_ids.get(d.index) == provider), None)

    def where(self, provider: str, param: str | None = None) -> str:
        """``config.yaml:5 (model_list[0].litellm_params.api_base)``: where a deployment's
        ``litellm_params`` (entry ``param``) is written, else the deployment itself."""
        d = self.deployment(provider)
        if d is None:
            return str(self.config.path)
        line = self.config.source.line_of(_loc(d) + ((param,) if param else ()))
        field = (f"{d.where}.litellm_params" + (f".{param}" if param else "") if line
                 else f"{d.where}: model group {d.group!r}")
        return f"{self.config.path}:{line or d.line} ({field})"

    def ineligible_fix(self, provider: str, contract: str, command: str) -> str:
        """What to do about an ineligible deployment, in LiteLLM's terms: every link of a
        LiteLLM config is automatic (there is no 'failover: manual'), so change the deployment,
        or take it out of the fallback lists, or route its group elsewhere."""
        origin = self.origins.get((provider, contract))
        fallback = origin is not None and origin.field.startswith(
            ("router_settings", "litellm_settings"))
        change = (f"make the provider meet the contract (deployment {provider!r}: its "
                  f"litellm_params at {self.where(provider)}), then run: {command}")
        if fallback:
            assert origin is not None
            return (f"{change}; or take {origin.group!r} out of the fallback list at {origin} — "
                    "'failover-harness export litellm-fallbacks' prints the lists that hold only "
                    "certified fallbacks")
        return (f"{change}; or point model group {(origin.group if origin else provider)!r} at a "
                "deployment that meets it")


def _loc(d: LiteLLMDeployment) -> tuple[str | int, ...]:
    return ("model_list", d.index, "litellm_params")
