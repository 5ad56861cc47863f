"""A gateway config fills in a drill profile: LiteLLM's model group, its fallbacks and their
loopback ``api_base`` become the ``drill:`` section (plain data, validated by the drill room),
so that the one drill engine drills the gateway like any other black box.

The section submits a chat call through the gateway (``kind: chat``, the group as the model,
the key from ``${<api_key_env>}``), serves each deployment of the group (role primary) and of
everything it falls back to (role fallback) on its ``api_base`` port, takes the group's timeout
as the provider timeout, and declares LiteLLM's promise as the gateway drill always judged it:
one billed completion per request, no hedge.
"""

from __future__ import annotations

from typing import Any

from harness.gateways.drill import gateway_timeout, plan_deployments
from harness.gateways.litellm_config import LiteLLMConfig

WIRES = {"openai-chat": "openai", "anthropic-messages": "anthropic"}


def litellm_drill_section(config: LiteLLMConfig, group: str, provider_ids: dict[int, str], *,
                          api_key_env: str | None = "LITELLM_MASTER_KEY") -> dict[str, Any]:
    """The ``drill:`` section for ``group`` behind a LiteLLM proxy running ``config``
    (ConfigError at the config's line when an ``api_base`` is not a loopback port of its own)."""
    planned = plan_deployments(config, group, provider_ids)
    providers = []
    for pid, _deployment, primary, host, port, kind in planned:
        providers.append({"name": pid, "wire": WIRES[kind],
                          "role": "primary" if primary else "fallback",
                          "host": "127.0.0.1" if host == "localhost" else host, "port": port})
    timeout = max(gateway_timeout(config, d) for _pid, d, primary, *_rest in planned if primary)
    headers = {"Authorization": f"Bearer ${{{api_key_env}}}"} if api_key_env else {}
    return {
        "submit": {"kind": "chat", "path": "/chat/completions", "headers": headers,
                   "body": {"model": group, "max_tokens": 16, "messages": [
                       {"role": "user", "content": "failover drill {tag}: answer in one word"}]}},
        "providers": providers,
        "timeouts": {"provider_s": timeout, "job_s": min(600.0, timeout * 4 + 5)},
        "policy": {"max_billed_calls": 1, "hedge": {"allowed": False}},
    }

