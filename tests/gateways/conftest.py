"""Fixtures for the gateway tests: a project around a LiteLLM config and fakes on loopback. The
real LiteLLM proxy and Portkey gateway (``gateway``, ``portkey``) are in tests/gateways/servers.py,
registered once in tests/conftest.py so that every folder shares one of each per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer

SHIPPED = Path(__file__).resolve().parents[2] / "contracts" / "ticket_triage"
# certify options for tests: no progress bar, and a concurrency a loaded 2-core machine keeps
# (64 connects at once to a fake served from this process can time out under load)
QUIET = ("--no-progress", "--concurrency", "8")
KEY_ENV = "GATEWAY_TEST_KEY"  # the fakes accept any key; the variable must exist


def copy_contract(root: Path, samples: int = 2) -> Path:
    """The shipped contract, with fewer samples per golden input (the verdicts do not change:
    40 passing samples still prove 90 % at 95 % confidence; 20 would leave it undecided)."""
    target = root / "contracts" / "ticket_triage"
    shutil.copytree(SHIPPED, target, ignore=shutil.ignore_patterns("__pycache__"))
    contract = target / "contract.yaml"
    contract.write_text(contract.read_text().replace("samples: 3", f"samples: {samples}"))
    return target


def deployment(group: str, model: str, api_base: str, **params: Any) -> dict[str, Any]:
    return {"model_name": group, "litellm_params": {
        "model": model, "api_base": api_base, "api_key": f"os.environ/{KEY_ENV}",
        "temperature": 0, **params}}


class LiteLLMProject:
    """A folder with config.yaml (LiteLLM), failover-harness.yaml and contracts/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "config.yaml"
        self.lock = root / "config.lock.json"
        copy_contract(root)

    def write(self, deployments: list[dict[str, Any]], fallbacks: dict[str, list[str]],
              *, contracts: dict[str, str] | None = None, **extra: Any) -> Path:
        doc: dict[str, Any] = {"model_list": deployments}
        if fallbacks:
            doc["router_settings"] = {"fallbacks": [{g: f} for g, f in fallbacks.items()]}
        doc.update(extra)
        self.config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        if contracts is not None:
            (self.root / "failover-harness.yaml").write_text(
                yaml.safe_dump({"contracts": contracts}), encoding="utf-8")
        return self.config

    def cli(self, *args: str) -> int:
        return main([*args])

    def line_of(self, text: str) -> int:
        """1-based line of the first line of config.yaml containing ``text``."""
        for n, line in enumerate(self.config.read_text().splitlines(), start=1):
            if text in line:
                return n
        raise AssertionError(f"{text!r} not in config.yaml")


@pytest.fixture
def litellm_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LiteLLMProject:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, "fake-key-for-tests")
    return LiteLLMProject(tmp_path)


@pytest.fixture(scope="module")
def golden_fakes() -> Iterator[dict[str, FakeServer]]:
    """Loopback fake providers answering the shipped contract: conformant and broken ones."""
    contract = load_contracts(SHIPPED.parent)["ticket_triage"]
    answer = golden_answer(contract)
    servers = {
        "openai": FakeServer(FakeProvider("openai-chat", answer=answer)),
        "anthropic": FakeServer(FakeProvider("anthropic-messages", answer=answer)),
        "hallucinating": FakeServer(FakeProvider("openai-chat", "hallucinated-key",
                                                 answer=answer)),
    }
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


class Gateway:
    """A real LiteLLM proxy running ``config`` in front of recording fakes (see gateway())."""

    def __init__(self, root: Path, proxy: Any, fakes: dict[str, Any], drill_ports: dict[str, int]):
        self.root, self.proxy, self.fakes, self.drill_ports = root, proxy, fakes, drill_ports
        self.config = root / "config.yaml"

    @property
    def url(self) -> str:
        return str(self.proxy.url)
