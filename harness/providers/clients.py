"""Provider clients: pick the wire format for a :class:`ProviderConfig` and read its key.

``client_for(cfg)`` returns an :class:`OpenAIChatClient` or :class:`AnthropicMessagesClient`
with ``async complete(req)``, ``complete_sync(req)`` and ``build_request_body(req)``. A
``base_url`` of ``fake://<behaviour>`` routes in-process to a fake provider of that kind, so a
providers.yaml made of fakes runs offline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from harness.providers.anthropic_messages import AnthropicMessagesClient
from harness.providers.base import (
    ProviderClient,
    ProviderReply,
    ProviderRequest,
    Usage,
    parse_json_object,
)
from harness.providers.classify import ProviderCallError
from harness.providers.config import ProviderConfig, ProvidersFile
from harness.providers.fake_transport import FAKE_BASE_URLS, fake_transport
from harness.providers.openai_chat import OpenAIChatClient
from harness.providers.secrets import Secret, secret_from_env

__all__ = [
    "AnthropicMessagesClient",
    "OpenAIChatClient",
    "ProviderCallError",
    "ProviderClient",
    "ProviderReply",
    "ProviderRequest",
    "Usage",
    "client_for",
    "clients_for",
    "parse_json_object",
]

CLIENT_CLASSES: dict[str, type[ProviderClient]] = {
    "openai-chat": OpenAIChatClient,
    "anthropic-messages": AnthropicMessagesClient,
}
# A fake provider needs some key on the wire; this one is not a secret.
FAKE_KEY = "fake-key-not-secret"


def client_for(
    cfg: ProviderConfig,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    env: Mapping[str, str] = os.environ,
) -> ProviderClient:
    """A client for ``cfg``; its key from ``env[cfg.api_key_env]`` (ConfigError if missing),
    except for a ``fake://`` provider, which never reads ``env`` (it sends a fixed non-secret key).

    ``transport`` replaces the network (respx, a fake, a recorder). For ``fake://<behaviour>``
    without a transport, a fresh in-process fake of the provider's kind is used
    (``client.transport.deliveries`` counts its calls).
    """
    cls = CLIENT_CLASSES[cfg.kind]
    if cfg.is_fake:
        # A fake never reads the environment: the real key named by api_key_env (set for the
        # day the base_url becomes real) must not travel to a fake, nor into its recordings.
        if transport is None:
            behaviour = cfg.fake_behaviour
            assert behaviour is not None
            transport = fake_transport(cfg.kind, behaviour)
        return cls(cfg, api_key=Secret(FAKE_KEY), base_url=FAKE_BASE_URLS[cfg.kind],
                   transport=transport, headers=cfg.header_values(env))
    key = secret_from_env(env, cfg.api_key_env) if cfg.api_key_env else None
    if key is None:
        raise cfg.missing_key()
    return cls(cfg, api_key=key, transport=transport, headers=cfg.header_values(env))


def clients_for(
    providers: ProvidersFile,
    *,
    transports: Mapping[str, httpx.AsyncBaseTransport] | None = None,
    env: Mapping[str, str] = os.environ,
) -> dict[str, ProviderClient]:
    """One client per provider of ``providers`` (``transports`` by provider id, optional)."""
    transports = transports or {}
    return {pid: client_for(cfg, transport=transports.get(pid), env=env)
            for pid, cfg in providers.providers.items()}
