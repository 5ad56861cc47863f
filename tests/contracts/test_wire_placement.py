"""Where each wire client puts the system prompt: a unit test of the clients, not a check.

The placement is fixed by our request builder per wire format, so it cannot differ between
providers of one kind: it is proven here once, and the certification does not claim it.
"""

from __future__ import annotations

import pytest

from harness.providers.base import ProviderRequest
from harness.providers.clients import client_for
from harness.providers.config import ProviderConfig

REQ = ProviderRequest(system="SYSTEM PROMPT", user="USER MESSAGE", schema={"type": "object"},
                      schema_name="ticket", seed=7)


def _client(kind: str):
    return client_for(ProviderConfig(
        id="p", kind=kind, base_url="fake://conformant", model="m",
        tokenizer="tiktoken:cl100k_base", context_window=8192,
    ))


def test_openai_chat_sends_the_system_prompt_as_the_first_message_and_the_seed() -> None:
    body = _client("openai-chat").build_request_body(REQ)
    assert body["messages"] == [{"role": "system", "content": "SYSTEM PROMPT"},
                                {"role": "user", "content": "USER MESSAGE"}]
    assert body["seed"] == 7  # a per-sample seed: samples are independent draws


def test_anthropic_messages_sends_the_system_prompt_top_level_and_no_system_role() -> None:
    body = _client("anthropic-messages").build_request_body(REQ)
    assert body["system"] == "SYSTEM PROMPT" or body["system"] == [
        {"type": "text", "text": "SYSTEM PROMPT"}]
    assert all(m["role"] != "system" for m in body["messages"])
    assert any(m["role"] == "user" and "USER MESSAGE" in str(m["content"])
               for m in body["messages"])
    assert "seed" not in body  # the Messages API takes no seed


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
def test_the_system_prompt_never_travels_inside_a_user_message(kind: str) -> None:
    body = _client(kind).build_request_body(REQ)
    assert not any(m["role"] == "user" and "SYSTEM PROMPT" in str(m["content"])
                   for m in body["messages"])


@pytest.mark.parametrize(("base_url", "kind", "seeded"), [
    ("https://api.openai.com/v1", "openai-chat", True),
    ("fake://conformant", "openai-chat", True),
    ("http://litellm.internal:4000", "openai-chat", False),  # may refuse it (LiteLLM → Anthropic)
    ("https://api.anthropic.com", "anthropic-messages", False),
])
def test_certification_seeds_only_where_the_api_is_known_to_take_a_seed(
    base_url: str, kind: str, seeded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEED_TEST_KEY", "sk-seed-test-0000")
    from harness.contracts.exchange import open_channel
    from harness.contracts.loader import load_contract
    from tests.contracts.conftest import SHIPPED

    cfg = ProviderConfig(id="p", kind=kind, base_url=base_url, model="m",
                         tokenizer="tiktoken:cl100k_base", context_window=8192,
                         api_key_env="SEED_TEST_KEY")
    contract = load_contract(SHIPPED)
    channel = open_channel(cfg, contract, mode="live", cassettes=None)
    assert channel.seeded is seeded
    first, second = (channel.request_for(contract.goldens[0], i) for i in (0, 1))
    assert not isinstance(first, str) and not isinstance(second, str)
    assert (first.seed is not None) is seeded
    if seeded:
        assert first.seed != second.seed
