"""Fixtures for provider tests: configs, a request, fake providers in-process and on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.providers import FakeProvider, FakeServer, ProviderConfig, ProviderRequest

KINDS = ("openai-chat", "anthropic-messages")

# A strict structured-output schema (every property required, no extra keys), as OpenAI wants.
TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["billing", "bug", "other"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 4},
        "needs_human": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
    "required": ["category", "priority", "needs_human", "tags"],
    "additionalProperties": False,
}


def make_config(kind: str, base_url: str, **overrides: Any) -> ProviderConfig:
    """A valid provider config of ``kind`` at ``base_url`` (fields overridable)."""
    fields: dict[str, Any] = {
        "id": f"{kind}-test",
        "kind": kind,
        "base_url": base_url,
        "model": "gpt-test" if kind == "openai-chat" else "claude-test",
        "api_key_env": "TEST_PROVIDER_KEY",
        "temperature": 0,
        "max_output_tokens": 256,
        "timeout": {"connect": 2, "read": 5},
        "tokenizer": "tiktoken:cl100k_base",
        "context_window": 8192,
    }
    fields.update(overrides)
    return ProviderConfig(**fields)


def sdk_base_url(kind: str, server_url: str) -> str:
    """The base_url the official SDK (and providers.yaml) uses for ``kind``."""
    return f"{server_url}/v1" if kind == "openai-chat" else server_url


@pytest.fixture
def ticket_request() -> ProviderRequest:
    return ProviderRequest(
        system="You triage support tickets. Answer with JSON only.",
        user="Subject: refund\n\nI was charged twice for my subscription.",
        schema=TICKET_SCHEMA,
        schema_name="ticket",
    )


@pytest.fixture
def env() -> dict[str, str]:
    return {"TEST_PROVIDER_KEY": "sk-test-0123456789abcdef"}


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeServer]]:
    """Start fake providers on loopback sockets; all are stopped after the test."""
    servers: list[FakeServer] = []

    def start(kind: str, behaviour: str = "conformant", **kwargs: Any) -> FakeServer:
        server = FakeServer(FakeProvider(kind, behaviour, **kwargs)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
