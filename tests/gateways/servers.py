"""The real gateways of the test session: a LiteLLM proxy in front of recording fakes, and the
Portkey gateway. Registered once, in tests/conftest.py: a fixture imported into two conftests
is two fixtures, and each would start its own server in the same session."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest
import yaml

from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake_server import FakeServer
from tests.gateways.conftest import KEY_ENV, Gateway, copy_contract, deployment
from tests.gateways.portkey_gateway import PortkeyGateway, node_or_skip


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One LiteLLM proxy for the session (it takes seconds to start), offline, on loopback.

    Groups: ``triage`` (OpenAI fake) falling back to ``triage-fallback`` (Anthropic fake, so
    LiteLLM translates); ``droppy`` (OpenAI fake; the gateway drops ``response_format``);
    ``hot`` (OpenAI fake; temperature 0.9, above the contract's maximum);
    ``drill-primary`` (timeout 1 s) falling back to ``drill-fallback``, whose fakes the drill
    command itself starts on the reserved ports; ``nowhere``, whose api_base nothing listens on.
    """
    # Not imported here: importing litellm fetches a model-cost map from the network.
    if importlib.util.find_spec("litellm") is None:
        pytest.skip("the gateway tests need the test extra (litellm[proxy])")
    from harness.providers.recording import RecordingFake
    from tests.gateways.litellm_proxy import LiteLLMProxy, free_port

    root = tmp_path_factory.mktemp("gateway")
    copy_contract(root)
    contract = load_contracts(root / "contracts")["ticket_triage"]
    answer = golden_answer(contract)
    golden = "golden ticket_triage"  # they answer from the golden file, and say so
    fakes = {
        "triage": FakeServer(RecordingFake("openai-chat", answer=answer, answers_from=golden)),
        "triage-fallback": FakeServer(RecordingFake("anthropic-messages", answer=answer,
                                                    answers_from=golden)),
        "droppy": FakeServer(RecordingFake("openai-chat", answer=answer, answers_from=golden)),
        "hot": FakeServer(RecordingFake("openai-chat", answer=answer, answers_from=golden)),
    }
    for server in fakes.values():
        server.start()
    ports = {"drill-primary": free_port(), "drill-fallback": free_port()}
    doc = {
        "model_list": [
            deployment("triage", "openai/gpt-4o-mini", f"{fakes['triage'].url}/v1"),
            deployment("triage-fallback", "anthropic/claude-3-5-haiku-20241022",
                       fakes["triage-fallback"].url, max_tokens=512),
            deployment("droppy", "openai/gpt-4o-mini", f"{fakes['droppy'].url}/v1",
                       additional_drop_params=["response_format"]),
            deployment("drill-primary", "openai/gpt-4o-mini",
                       f"http://127.0.0.1:{ports['drill-primary']}/v1", timeout=1),
            deployment("drill-fallback", "openai/gpt-4o-mini",
                       f"http://127.0.0.1:{ports['drill-fallback']}/v1"),
            deployment("nowhere", "openai/gpt-4o-mini",  # nothing listens there; no retries
                       f"http://127.0.0.1:{free_port()}/v1", num_retries=0),  # (2 by default)
            deployment("hot", "openai/gpt-4o-mini", f"{fakes['hot'].url}/v1",
                       temperature=0.9),  # above the contract's max_temperature (0.3)
        ],
        "router_settings": {"fallbacks": [{"triage": ["triage-fallback"]},
                                          {"drill-primary": ["drill-fallback"]}]},
    }
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    os.environ.setdefault(KEY_ENV, "fake-key-for-tests")  # the proxy reads it at start
    proxy = LiteLLMProxy(config, root / "litellm.log")
    try:
        proxy.start()
        yield Gateway(root, proxy, fakes, ports)
    finally:
        proxy.stop()
        for server in fakes.values():
            server.stop()


@pytest.fixture(scope="session")
def portkey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PortkeyGateway]:
    """The real Portkey gateway (pinned 1.15.2) on loopback, one per session; each request
    carries its routing in the ``x-portkey-config`` header. Skips without node (fails in CI)."""
    node = node_or_skip()
    gateway = PortkeyGateway(node, tmp_path_factory.mktemp("portkey") / "portkey.log")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()
