"""A provider that no sample reached is undecided, never ineligible (qa Q3).

Nothing listening at its base_url, or a key the provider refuses (401): not one answer of a
model was seen, so the certification says nothing about the contract. It used to be certified
INELIGIBLE ("schema: the call failed …"), written so to the lock, and then failed the gate
(exit 1) with "make the provider meet the contract". Now: undecided (exit 3), and the fix says
to make the provider reachable. A provider that answers and breaks the contract stays
ineligible."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "UNREACHED_TEST_KEY"
QUIET = ("--no-progress", "--concurrency", "8")


def free_url() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    contracts = tmp_path / "contracts"
    shutil.copytree(ROOT / "contracts", contracts, ignore=shutil.ignore_patterns("__pycache__"))
    contract = contracts / "ticket_triage" / "contract.yaml"
    contract.write_text(contract.read_text().replace("samples: 3", "samples: 1"))
    monkeypatch.setenv(KEY_ENV, "a-key-the-provider-does-not-know")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def servers(project: Path) -> Iterator[dict[str, str]]:
    """A fake refusing our key (401) and a fake breaking the contract (an extra key)."""
    answer = golden_answer(load_contracts(project / "contracts")["ticket_triage"])
    started = {
        "refusing": FakeServer(FakeProvider("openai-chat", answer=answer,
                                            expected_api_key="the-right-key")).start(),
        "breaking": FakeServer(FakeProvider("openai-chat", "hallucinated-key",
                                            answer=answer)).start(),
    }
    yield {name: f"{server.url}/v1" for name, server in started.items()}
    for server in started.values():
        server.stop()


def write_providers(root: Path, base_urls: dict[str, str]) -> None:
    def link(url: str) -> dict[str, object]:
        return {"kind": "openai-chat", "base_url": url, "model": "gpt-4o-mini-2024-07-18",
                "api_key_env": KEY_ENV, "temperature": 0, "max_output_tokens": 512,
                "tokenizer": "tiktoken:cl100k_base", "context_window": 128000}

    (root / "providers.yaml").write_text(yaml.safe_dump({
        "version": 1,
        "providers": {name: link(url) for name, url in base_urls.items()},
        "chains": {"ticket_triage": [{"provider": name, "failover": "auto"}
                                     for name in base_urls]},
    }), "utf-8")


def verdicts(root: Path) -> dict[str, dict[str, object]]:
    lock = json.loads((root / "providers.lock.json").read_text("utf-8"))
    return {r["provider"]: r for r in lock["certifications"]}


def test_an_unreachable_or_refusing_provider_is_undecided_not_ineligible(
        project: Path, servers: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    write_providers(project, {"nothing-listens": free_url(), "refuses-our-key":
                              servers["refusing"]})
    code = main(["certify", *QUIET])
    out = capsys.readouterr().out
    assert code == 3, out  # unknown, not failed
    for name, record in verdicts(project).items():
        assert record["verdict"] == "undecided", (name, record)
        schema = next(c for c in record["checks"] if c["name"] == "schema")  # type: ignore
        assert schema["decision"] == "undecided"
        assert schema["summary"].startswith("no sample reached the provider"), schema
    assert "make the provider reachable (network, base_url, API key)" in out
    # more samples of nothing would not decide it (the contract's samples: 1 cannot decide at
    # all, so certify sampled adaptively and says so; the fix is to reach the provider)
    assert "sample until decided" not in out and "raise certification.budget" not in out
    assert main(["gate"]) == 3
    gate = capsys.readouterr().out
    assert "UNDECIDED" in gate and "make the provider reachable" in gate, gate
    assert "make the provider meet the contract" not in gate


def test_a_provider_that_answers_and_breaks_the_contract_stays_ineligible(
        project: Path, servers: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    write_providers(project, {"breaks-it": servers["breaking"]})
    assert main(["certify", *QUIET]) == 1, capsys.readouterr().out
    assert verdicts(project)["breaks-it"]["verdict"] == "ineligible"
