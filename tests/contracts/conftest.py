"""Fixtures for the contract verifier: a copy of the shipped contract, providers files of fakes."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.contracts.certifier import CertificationRun, certify, plan
from harness.contracts.workspace import Workspace
from harness.gateways.sources import open_workspace

SHIPPED = Path(__file__).resolve().parents[2] / "contracts" / "ticket_triage"


def provider(behaviour: str = "conformant", kind: str = "openai-chat", **extra: Any) -> dict:
    """A providers.yaml entry for an in-process fake provider."""
    return {
        "kind": kind,
        "base_url": f"fake://{behaviour}",
        "model": f"fake-{behaviour}",
        "temperature": 0,
        "max_output_tokens": 512,
        "tokenizer": "tiktoken:cl100k_base",
        "context_window": 8192,
        **extra,
    }


class Project:
    """A temporary project folder: providers.yaml, contracts/ticket_triage, lock, cassettes."""

    def __init__(self, root: Path, *, fresh: bool = True) -> None:
        """``fresh``: copy the shipped contract in; otherwise ``root`` already is a project."""
        self.root = root
        self.contracts = root / "contracts"
        self.contract = self.contracts / "ticket_triage"
        if fresh:
            shutil.copytree(SHIPPED, self.contract, ignore=shutil.ignore_patterns("__pycache__"))
        self.providers_path = root / "providers.yaml"
        self.lock_path = root / "providers.lock.json"

    def write_providers(
        self, providers: dict[str, dict], chain: list[tuple[str, str]] | None = None
    ) -> Path:
        links = chain or [(pid, "auto") for pid in providers]
        doc = {
            "version": 1,
            "providers": providers,
            "chains": {"ticket_triage": [{"provider": p, "failover": f} for p, f in links]},
        }
        self.providers_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return self.providers_path

    def workspace(self) -> Workspace:
        return open_workspace(self.providers_path)

    def certify(self, mode: str = "live", **kwargs: Any) -> CertificationRun:
        ws = self.workspace()
        targets = plan(ws.providers, ws.contracts, providers_path=str(self.providers_path))
        return asyncio.run(certify(
            targets, mode=mode, cassettes=self.root / "cassettes", **kwargs  # type: ignore[arg-type]
        ))

    def cli(self, *args: str) -> int:
        return main([args[0], "--providers", str(self.providers_path), *args[1:]])

    def add_golden(self, name: str, subject: str, body: str, expected: dict) -> None:
        doc = {
            "language": "en",
            "input": {"channel": "web", "customer_tier": "free", "subject": subject, "body": body},
            "expected": expected,
        }
        (self.contract / "golden" / f"{name}.yaml").write_text(
            yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8"
        )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.chdir(tmp_path)  # reports/ goes here, not into the repository
    return Project(tmp_path)


@pytest.fixture
def check_of() -> Callable[[Any, str], Any]:
    def get(record: Any, name: str) -> Any:
        return next(c for c in record.checks if c.name == name)

    return get
