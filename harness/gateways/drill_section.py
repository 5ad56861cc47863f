"""A gateway config fills in a drill profile: LiteLLM's model group, its fallbacks and their
loopback ``api_base`` (or a Portkey config's targets and their ``custom_host``) become the
``drill:`` section (plain data, validated by the drill room), so that the one drill engine
drills the gateway like any other black box.

The section submits a chat call through the gateway (``kind: chat``; LiteLLM: the group as the
model, the key from ``${<api_key_env>}``; Portkey: the config in the ``x-portkey-config``
header), serves each upstream (the first role primary, those it falls back to role fallback)
on its own loopback port, takes the gateway's timeout as the provider timeout, and declares
the promise a gateway drill always judged: one billed completion per request, no hedge.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from harness.domain.errors import ConfigError
from harness.gateways.litellm_config import LiteLLMConfig, LiteLLMDeployment
from harness.gateways.portkey_source import CONFIG_HEADER, PortkeySource, upstreams

WIRES = {"openai-chat": "openai", "anthropic-messages": "anthropic"}
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_DRILL_TIMEOUT_S = 30.0
LITELLM_DEFAULT_TIMEOUT_S = 600.0
PORTKEY_DEFAULT_TIMEOUT_S = 10.0  # a drill needs a bound: Portkey has none without request_timeout
PROMPT = "failover drill {tag}: answer in one word"


def gateway_timeout(config: LiteLLMConfig, deployment: LiteLLMDeployment) -> float:
    """The seconds the gateway waits for this deployment (LiteLLM's precedence)."""
    data = config.source.data or {}
    for value in (deployment.params.get("timeout"),
                  (data.get("router_settings") or {}).get("timeout"),
                  (data.get("litellm_settings") or {}).get("request_timeout")):
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                break
    return LITELLM_DEFAULT_TIMEOUT_S


def _reach(config: LiteLLMConfig, group: str) -> list[str]:
    reach, queue = [group], [group]
    while queue:
        current = queue.pop(0)
        nexts = [t for e in config.fallbacks if e.group == current for t in e.fallbacks]
        nexts += [t for d in config.default_fallbacks for t in d.groups]
        for target in nexts:
            if target not in reach:
                reach.append(target)
                queue.append(target)
    return reach


def plan_deployments(
    config: LiteLLMConfig, group: str, provider_ids: dict[int, str]
) -> list[tuple[str, LiteLLMDeployment, bool, str, int, str]]:
    """(id, deployment, primary?, host, port, kind) for the group and everything it falls back
    to; ConfigError when an ``api_base`` is not a loopback address of its own."""
    groups = config.groups()
    if group not in groups:
        raise ConfigError(f"model group {group!r} is not in {config.path}", field="--model",
                          fix=f"use one of: {', '.join(sorted(groups))}")
    out = []
    seen: dict[tuple[str, int], str] = {}
    for g in _reach(config, group):
        for d in groups[g]:
            pid = provider_ids[d.index]
            loc = ("model_list", d.index, "litellm_params", "api_base")
            parts = urlsplit(d.api_base or "")
            if parts.hostname not in LOOPBACK or not parts.port:
                raise ConfigError(
                    f"deployment {pid!r} has api_base {d.api_base!r}: a drill answers in place "
                    "of the providers, on loopback addresses only",
                    file=str(config.path), line=config.source.line_of(loc) or d.line,
                    field=f"model_list[{d.index}].litellm_params.api_base",
                    fix="drill a test copy of the config whose api_base values are "
                        "http://127.0.0.1:<free port>, with the gateway started on that copy")
            key = (parts.hostname, parts.port)
            if key in seen:
                raise ConfigError(
                    f"deployments {seen[key]!r} and {pid!r} share {d.api_base}: the drill could "
                    "not tell their calls apart", file=config.where(loc).split(":")[0],
                    field=f"model_list[{d.index}].litellm_params.api_base",
                    fix="give each deployment its own port in the test copy")
            seen[key] = pid
            prefix = d.model.partition("/")[0] if "/" in d.model else (
                "anthropic" if d.model.startswith("claude") else "openai")
            kind = "anthropic-messages" if prefix == "anthropic" else "openai-chat"
            out.append((pid, d, g == group, parts.hostname, parts.port, kind))
    return out


def litellm_drill_section(config: LiteLLMConfig, group: str, provider_ids: dict[int, str], *,
                          api_key_env: str | None = "LITELLM_MASTER_KEY") -> dict[str, Any]:
    """The ``drill:`` section for ``group`` behind a LiteLLM proxy running ``config``
    (ConfigError at the config's line when an ``api_base`` is not a loopback port of its own,
    or when the group's timeout would make a hang drill too long)."""
    planned = plan_deployments(config, group, provider_ids)
    providers = []
    for pid, _deployment, primary, host, port, kind in planned:
        providers.append({"name": pid, "wire": WIRES[kind],
                          "role": "primary" if primary else "fallback",
                          "host": "127.0.0.1" if host == "localhost" else host, "port": port})
    primaries = [d for _pid, d, primary, *_rest in planned if primary]
    timeout = max(gateway_timeout(config, d) for d in primaries)
    if timeout > MAX_DRILL_TIMEOUT_S:
        raise ConfigError(
            f"the gateway waits {timeout:g} s for {group!r}: drilling a hang would take that long "
            "per call", file=str(config.path), line=primaries[0].line,
            field=f"model_list[{primaries[0].index}].litellm_params.timeout",
            fix="set `timeout: 1` (or router_settings.timeout) in the test copy of the config")
    headers = {"Authorization": f"Bearer ${{{api_key_env}}}"} if api_key_env else {}
    return _section(headers, {"model": group}, providers, timeout)


def portkey_drill_section(source: PortkeySource) -> dict[str, Any]:
    """The ``drill:`` section for a Portkey gateway running ``source``'s config: its targets
    (``custom_host`` on a loopback port of its own) served as the fakes, the whole config sent
    in the ``x-portkey-config`` header of every chat call."""
    providers = []
    seen: dict[tuple[str | None, int | None], str] = {}
    for up in upstreams(source):
        parts = urlsplit(up["base_url"])
        if parts.hostname not in LOOPBACK or not parts.port or (
                parts.hostname, parts.port) in seen:
            why = (f"shares {up['base_url']} with {seen[(parts.hostname, parts.port)]!r}"
                   if (parts.hostname, parts.port) in seen else
                   f"has base URL {up['base_url']!r}, not a loopback port")
            t = source.by_provider[up["provider"]]
            raise source.config.error(
                f"target {up['provider']!r} {why}: a drill answers in place of each upstream "
                "on a loopback port of its own", (*t.loc, "custom_host"),
                fix="drill a test copy of the config whose custom_host values are "
                    "http://127.0.0.1:<free port>/v1, each its own port")
        seen[(parts.hostname, parts.port)] = up["provider"]
        t = source.by_provider[up["provider"]]
        wire = "anthropic" if t.provider == "anthropic" else "openai"
        providers.append({"name": up["provider"], "wire": wire,
                          "role": "primary" if up["role"] == "primary" else "fallback",
                          "host": "127.0.0.1" if parts.hostname == "localhost"
                          else parts.hostname, "port": parts.port})
    timeouts = [u["timeout_s"] for u in upstreams(source) if u["timeout_s"]]
    timeout = max(timeouts, default=PORTKEY_DEFAULT_TIMEOUT_S)
    config = json.dumps(source.config.data, separators=(",", ":"))
    model = {"model": "gpt-4o-mini"}
    return _section({CONFIG_HEADER: config}, model, providers, timeout)


def _section(headers: dict[str, str], model: dict[str, str], providers: list[dict[str, Any]],
             timeout: float) -> dict[str, Any]:
    return {
        # the client sends a key, as a careful client would: do the gateway's retries keep it?
        "submit": {"kind": "chat", "path": "/chat/completions",
                   "headers": {**headers, "Idempotency-Key": "{key}"},
                   "body": {**model, "max_tokens": 16, "messages": [
                       {"role": "user", "content": PROMPT}]}},
        "providers": providers,
        "timeouts": {"provider_s": timeout, "job_s": min(600.0, timeout * 4 + 5)},
        "policy": {"max_billed_calls": 1, "hedge": {"allowed": False}},
    }
