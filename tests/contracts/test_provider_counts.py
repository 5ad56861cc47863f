"""The tokenization fit uses the provider's own prompt counts (reply usage) when it has them:
an approximate tokenizer (Anthropic's is not public) is replaced by what the provider counted,
live and from a cassette; a fake's made-up usage is never trusted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contract
from harness.providers.fake import FakeProvider
from harness.providers.fake_transport import FakeTransport
from tests.contracts.conftest import Project, provider

KEY_ENV = "COUNTS_TEST_KEY"


@pytest.fixture
def anthropic_api(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """"https://api.anthropic.test" answered in-process by a conformant golden-answer app whose
    replies carry usage.input_tokens (as the real API's do)."""
    contract = load_contract(project.contract)

    def transport(*args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        return FakeTransport(FakeProvider("anthropic-messages", "conformant",
                                          golden_answer(contract)))

    monkeypatch.setattr(httpx, "AsyncHTTPTransport", transport)
    monkeypatch.setenv(KEY_ENV, "sk-ant-counts-test-000000")


def _providers(project: Project) -> None:
    project.write_providers({
        "primary": provider(),
        "claude": {**provider(kind="anthropic-messages"), "base_url": "https://api.anthropic.test",
                   "api_key_env": KEY_ENV, "model": "claude-3-5-haiku-20241022"},
    })


def _tokenization(project: Project, provider_id: str) -> Any:
    record = project.workspace().lock.get(provider_id, "ticket_triage")
    assert record is not None
    return next(c for c in record.checks if c.name == "tokenization")


def test_the_fit_uses_the_providers_own_counts_live_and_replayed(
    project: Project, anthropic_api: None
) -> None:
    _providers(project)
    assert project.cli("certify", "--no-progress", "--record") == 0
    check = _tokenization(project, "claude")
    assert check.figures["counted_by_provider"] == 20
    assert check.figures["tokenizer_exact"] is True and check.figures["count_margin"] == 1.0
    assert "the provider's own counts (the usage of its replies" in check.summary
    assert "an approximation (Anthropic's tokenizer is not public)" in check.summary
    recorded = check.figures["max_prompt_tokens"]
    assert project.cli("certify", "--no-progress", "--replay") == 0  # the counts are in cassettes
    again = _tokenization(project, "claude")
    assert again.figures["counted_by_provider"] == 20
    assert again.figures["max_prompt_tokens"] == recorded
    fake = _tokenization(project, "primary")  # fake://: its usage is made up, never trusted
    assert fake.figures["counted_by_provider"] == 0 and fake.figures["count_margin"] == 1.25
