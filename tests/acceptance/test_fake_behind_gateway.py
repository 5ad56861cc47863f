"""A fake provider answering from the golden files stays labelled a fake when a gateway stands
between certify and it (qa Q26). LiteLLM forwards a provider's response headers under the prefix
``llm_provider-``; the gateway here is a small loopback proxy that does the same, in front of a
real ``FakeProvider`` server answering golden expectations."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from harness.cli import main
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer
from tests._servers import tls

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "QA_GATEWAY_KEY"


def prefixing_gateway(upstream: str) -> ThreadingHTTPServer:
    """Forward every request to ``upstream``; answer with its body and its headers renamed
    ``llm_provider-<name>``, as LiteLLM's proxy does."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "content-length", "connection")}
            reply = httpx.post(upstream + self.path, content=body, headers=headers, timeout=30,
                               verify=tls())
            self.send_response(reply.status_code)
            for name, value in reply.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding", "connection",
                                        "content-encoding"):
                    self.send_header(f"llm_provider-{name}", value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[str]:
    contracts = tmp_path / "contracts"
    shutil.copytree(ROOT / "contracts", contracts, ignore=shutil.ignore_patterns("__pycache__"))
    contract = load_contracts(contracts)["ticket_triage"]
    fake = FakeServer(FakeProvider("openai-chat", answer=golden_answer(contract),
                                   answers_from="golden ticket_triage")).start()
    proxy = prefixing_gateway(fake.url)
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    finally:
        proxy.shutdown()
        proxy.server_close()
        fake.stop()


def test_golden_answers_through_a_gateway_are_still_labelled_fake(
        gateway: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(KEY_ENV, "qa-gateway-key-0000")
    monkeypatch.chdir(tmp_path)
    link = {"kind": "openai-chat", "base_url": gateway, "model": "triage", "api_key_env": KEY_ENV,
            "temperature": 0, "max_output_tokens": 512, "tokenizer": "tiktoken:cl100k_base",
            "context_window": 128000}
    (tmp_path / "providers.yaml").write_text(yaml.safe_dump({
        "version": 1, "providers": {"via-gateway": link},
        "chains": {"ticket_triage": [{"provider": "via-gateway", "failover": "auto"}]},
    }), "utf-8")
    code = main(["certify", "--no-progress", "--concurrency", "8"])
    out = capsys.readouterr().out
    assert code == 0, out
    record = json.loads((tmp_path / "providers.lock.json").read_text())["certifications"][0]
    assert record["verdict"] == "eligible"
    assert record["provenance"] == "fake provider (answers from the golden file)", record
    assert "fake provider (answers from the golden file)" in out
