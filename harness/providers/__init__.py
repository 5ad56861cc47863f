"""Providers: providers.yaml, OpenAI/Anthropic wire clients, error classification, fake providers.

The public surface is re-exported here, imported lazily so that ``harness.providers.config``
does not pull in httpx and uvicorn. Implementation lives in the submodules: ``config``
(providers.yaml), ``base``/``openai_chat``/``anthropic_messages``/``clients`` (wire clients),
``classify`` (failed vs unknown), ``secrets`` (keys and redaction), ``behaviours``, and
``fake``/``fake_wire``/``fake_answers``/``fake_transport``/``fake_server`` (fake providers),
``recording`` (a fake that records every call and is scripted per request: the drills) with
``holds`` (its held answers and hung calls, let go by the drill).
The in-process fake's factory is ``harness.providers.fake_transport.fake_transport`` (not
re-exported: the name is taken by its module).
"""

from __future__ import annotations

from typing import Any

from harness.domain import lazy as _lazy

_EXPORTS = {
    "ALL_BEHAVIOURS": "behaviours",
    "Behaviour": "behaviours",
    "BehaviourError": "behaviours",
    "ChainLink": "config",
    "DeliveryLog": "fake",
    "FakeProvider": "fake",
    "FakeServer": "fake_server",
    "FakeTransport": "fake_transport",
    "ProviderCallError": "classify",
    "ProviderClient": "base",
    "ProviderConfig": "config",
    "ProviderReply": "base",
    "ProviderRequest": "base",
    "ProvidersFile": "config",
    "Secret": "secrets",
    "Usage": "base",
    "classify_status": "classify",
    "classify_transport_error": "classify",
    "client_for": "clients",
    "clients_for": "clients",
    "fake_routes": "fake_transport",
    "load_answers": "fake_answers",
    "load_providers": "config",
    "minimal_answer": "fake_answers",
    "minimal_instance": "fake_answers",
    "parse_providers": "config",
    "providers_json_schema": "config",
    "redact": "secrets",
    "redact_headers": "secrets",
    "redact_value": "secrets",
    "request_key": "fake",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
