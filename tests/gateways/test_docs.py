"""docs/gateways.md: its LiteLLM config and failover-harness.yaml examples load as documented."""

from __future__ import annotations

from pathlib import Path

from harness.gateways.sources import load_source
from tests.docs.test_doc_examples import block


def test_the_litellm_example_loads(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(block("gateways.md", "## A LiteLLM config as the provider source", "yaml"))
    project = block("gateways.md", "**Which contract a group serves**", "yaml")
    (tmp_path / "failover-harness.yaml").write_text(project)
    providers, _ = load_source(config)
    assert [link.provider for link in providers.chains["ticket_triage"]] == [
        "triage", "triage-fallback"]
    triage = providers.providers["triage"]
    # via: in the example: the samples go through the gateway, with the gateway's key
    assert (triage.base_url, triage.model, triage.api_key_env) == (
        "http://127.0.0.1:4000", "triage", "LITELLM_MASTER_KEY")
    assert triage.hashed_fields()["base_url"] == "https://api.openai.com/v1"
