"""A Portkey gateway config as a provider source: targets become providers, the routing a chain.

``--providers portkey:config.json`` (or any JSON file shaped like one). The config is one route,
so it serves one contract: ``contracts: {<file stem>: ID}`` in failover-harness.yaml beside it
(``config`` for config.json), or ``--contract-map config=ID``. The chain is every target in the
order the gateway tries them (fallbacks after the primary; loadbalanced targets each answer
some requests), all ``auto``: the gateway fails over without asking anyone.

Direct (default), each target is certified at its own address (``custom_host``, else the
provider's public API) with the request Portkey would send it: ``override_params`` applied.
``--via URL`` certifies through the running gateway: every target is addressed alone by its own
one-target ``x-portkey-config`` header, so its samples go to its upstream, and the wire audit
(:mod:`harness.gateways.audit`) sees what the gateway changed. A certification binds to the
target's effective config (provider, host, override_params, retry), never to how it is reached.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.domain.errors import ConfigError
from harness.gateways.portkey_config import (
    PortkeyConfig,
    PortkeyTarget,
    read_portkey_config,
    target_config,
)
from harness.gateways.source import DEFAULT_KEY_ENV, PROJECT_FILE, UPSTREAMS, project_settings
from harness.providers.config import ProviderConfig, ProvidersFile, Timeout
from harness.providers.secrets import register_secret

CONFIG_HEADER = "x-portkey-config"
DEFAULT_MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-20241022"}
_ID_BAD = re.compile(r"[^A-Za-z0-9._-]+")


class Routed(ProviderConfig):
    """A Portkey target as a provider."""

    target: str  # targets[1].targets[0]
    portkey_params: dict[str, Any]  # what changes the request: override_params, retry, host

    def hashed_fields(self) -> dict[str, Any]:
        fields = super().hashed_fields()
        fields.update(self.upstream or {})
        fields["portkey_params"] = self.portkey_params
        # what the upstream gets, direct or through the gateway (which applies the overrides)
        overrides = self.portkey_params.get("override_params", {})
        fields["temperature"] = overrides.get("temperature", fields["temperature"])
        return fields


@dataclass
class PortkeySource:
    """Where each provider of a Portkey config came from (a ProviderSource)."""

    config: PortkeyConfig
    contract: str
    route: str  # the mapping key (the file's stem)
    via: str | None
    by_provider: dict[str, PortkeyTarget] = field(default_factory=dict)
    name: str = "Portkey"

    def where(self, provider: str, param: str | None = None) -> str:
        t = self.by_provider.get(provider)
        if t is None:
            return str(self.config.path)
        if param and t.lines.get(param):
            return f"{self.config.path}:{t.lines[param]} ({t.where}.override_params.{param})"
        return f"{self.config.path}:{t.line} ({t.where})"

    def ineligible_fix(self, provider: str, contract: str, command: str) -> str:
        t = self.by_provider.get(provider)
        fix = (f"make the provider meet the contract (Portkey target {self.where(provider)}: "
               f"its provider, custom_host and override_params), then run: {command}")
        if t is not None and t.role != "primary":
            fix += f"; or take it out of the targets ({self.where(provider)})"
        return fix

    def reach_hint(self, provider: str, setting: str) -> str | None:
        if self.via:
            return (f"that the Portkey gateway at {self.via} runs, and can reach the target "
                    f"at {self.where(provider)} (custom_host, the key it forwards)")
        what = {"key": "the key", "model": "custom_host and override_params.model"}.get(
            setting, "the network and custom_host")
        return f"{what} of the target at {self.where(provider)}"

    def locate(self, standings: Sequence[Any]) -> list[Any]:
        out = []
        for s in standings:
            if s.eligible or s.provider not in self.by_provider:
                out.append(s)
                continue
            fix = (self.ineligible_fix(s.provider, s.contract, s.command)
                   if str(s.state) == "failed" else s.fix)
            out.append(replace(s, why=f"{self.where(s.provider)}: {s.why}", fix=fix))
        return out

    def missing_contract(self, contract: str, searched: Sequence[Path]) -> ConfigError:
        return ConfigError(
            f"the Portkey config {self.route!r} is mapped to contract {contract!r}, which has no "
            f"folder in {' nor '.join(map(str, searched))}",
            file=str(self.config.path.parent / PROJECT_FILE), field=f"contracts.{self.route}",
            fix=f"create {searched[0] / contract / 'contract.yaml'}, correct the mapping, or "
                "pass --contracts DIR")


class PortkeyProviders(ProvidersFile):
    """A ProvidersFile read from a Portkey config; ``.portkey`` keeps the details."""

    @property
    def portkey(self) -> PortkeySource | None:
        return self._source if isinstance(self._source, PortkeySource) else None


def load_portkey_providers(
    path: str | Path, *, contract_map: Mapping[str, str] | None = None, via: str | None = None,
) -> PortkeyProviders:
    """The providers and chain of a Portkey config (see the module docstring)."""
    config = read_portkey_config(path)
    project = project_settings(config.path.parent / PROJECT_FILE)
    mapping = dict(contract_map or project.get("contracts") or {})
    route = config.path.stem
    via = (via or project.get("via") or "").rstrip("/") or None
    if route not in mapping:
        raise ConfigError(
            f"the Portkey config is mapped to no contract (its key is the file's name, {route!r})",
            file=str(config.path.parent / PROJECT_FILE) if not contract_map else None,
            field=f"contracts.{route}" if not contract_map else "--contract-map",
            fix=f"write `contracts: {{{route}: <contract id>}}` in "
                f"{config.path.parent / PROJECT_FILE}, or pass --contract-map {route}=<id>")
    source = PortkeySource(config, mapping[route], route, via)
    providers: dict[str, Routed] = {}
    for target in config.targets:
        pid = _unique(_provider_id(target), providers)
        providers[pid] = _provider(config, target, pid, via=via,
                                   key_env=project.get("via_api_key_env") if via else None)
        source.by_provider[pid] = target
    chain = [{"provider": pid, "failover": "auto"} for pid in providers]
    parsed = PortkeyProviders.model_validate({"providers": providers,
                                              "chains": {source.contract: chain}})
    parsed.with_source(source)
    return parsed


def upstreams(source: PortkeySource) -> list[dict[str, Any]]:
    """The neutral shape a drill consumes: per upstream its id, base URL, role and order,
    timeout, retry, the status codes that fail over, and the headers that route to it alone."""
    out = []
    for pid, t in source.by_provider.items():
        out.append({
            "provider": pid, "base_url": _upstream_url(t), "role": t.role, "order": t.order,
            "weight": t.weight, "timeout_s": (t.request_timeout_ms or 0) / 1000 or None,
            "retry": t.retry, "on_status_codes": list(t.on_status_codes),
            "headers": {CONFIG_HEADER: json.dumps(target_config(t), separators=(",", ":"))},
            "where": source.where(pid),
        })
    return out


def _provider(config: PortkeyConfig, t: PortkeyTarget, pid: str, *, via: str | None,
              key_env: Any) -> Routed:
    params = t.override_params
    kind = UPSTREAMS.get(t.provider, (None, ""))[0]
    if kind is None and not via:
        raise config.error(
            f"target provider {t.provider!r} speaks a wire format failover-harness does not "
            "speak directly", (*t.loc, "provider"),
            fix="certify it through the gateway: pass --via http://<gateway> (or write `via:` "
                f"in {PROJECT_FILE}), so the samples travel client → Portkey → provider")
    model = str(params.get("model") or DEFAULT_MODEL.get(t.provider, "")) or None
    if model is None:
        raise config.error(f"target {t.where} names no model", (*t.loc, "override_params"),
                           fix='add "override_params": {"model": "<model>"}')
    if t.api_key:
        register_secret(t.api_key)  # sent to the gateway in the config header; never shown
    hashed = {"provider": t.provider, "custom_host": t.custom_host, "retry": t.retry,
              "override_params": {k: v for k, v in sorted(params.items()) if k != "model"}}
    body: dict[str, Any] = {
        "id": pid, "target": t.where, "portkey_params": hashed,
        "upstream": {"kind": kind or t.provider, "base_url": _upstream_url(t), "model": model},
        "max_output_tokens": params.get("max_tokens", 1024),
        "timeout": Timeout(read=t.request_timeout_ms / 1000) if t.request_timeout_ms
        else Timeout(),
        "tokenizer": "tiktoken:cl100k_base", "context_window": 128000,
        "api_key_env": str(key_env or DEFAULT_KEY_ENV.get(t.provider, "PORTKEY_API_KEY")),
    }
    if via:  # the gateway applies override_params: the client sends what an app would
        route = target_config(t)
        # Portkey wants a key in a target: the one the client holds, read from its variable
        route.setdefault("api_key", f"${{{body['api_key_env']}}}")
        body.update(kind="openai-chat", base_url=via, model=model, via=via, headers={
            CONFIG_HEADER: json.dumps(route, separators=(",", ":"))})
    else:  # what Portkey would send this target
        base = _upstream_url(t)
        if kind == "anthropic-messages":  # Portkey's Anthropic host ends in /v1; our client adds it
            base = base.removesuffix("/v1")
        body.update(kind=kind, base_url=base, model=model,
                    temperature=params.get("temperature", 0.0))
    try:
        return Routed.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        name = str(first["loc"][-1]) if first["loc"] else "override_params"
        param = {"max_output_tokens": "max_tokens"}.get(name, name)
        loc = (*t.loc, "override_params", param) if param in params else t.loc
        raise config.error(f"target {t.where}: {first['msg'].removeprefix('Value error, ')}",
                           loc, fix="correct the value in the Portkey config") from None


def _upstream_url(t: PortkeyTarget) -> str:
    return t.custom_host or UPSTREAMS.get(t.provider, ("", ""))[1]


def _provider_id(t: PortkeyTarget) -> str:
    model = str(t.override_params.get("model") or "")
    base = f"{t.provider}-{model}" if model else t.provider
    return _ID_BAD.sub("-", base).strip("-._")[:60] or f"target-{t.order}"


def _unique(pid: str, taken: Mapping[str, Any]) -> str:
    candidate, k = pid, 2
    while candidate in taken:
        candidate, k = f"{pid}-{k}", k + 1
    return candidate
