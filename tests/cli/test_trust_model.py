"""The trust model of docs/security.md, held as tests: what `gate` executes, and what a lock
file does not prove (it is plain JSON, and a hand edit changes what `gate` concludes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def gate(ws: Path) -> int:
    return main(["gate", "--providers", str(ws / "providers.yaml"), "--contracts",
                 str(ws / "contracts"), "--lock", str(ws / "providers.lock.json"),
                 "--report-dir", str(ws / "reports")])


def test_gate_executes_the_contracts_business_model(workspace: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    marker = workspace / "model-was-executed"
    model = workspace / "contracts" / "ticket_triage" / "model.py"
    model.write_text(model.read_text("utf-8") + f"\nopen({str(marker)!r}, 'w').close()\n",
                     "utf-8")
    gate(workspace)  # no lock yet: the verdict does not matter, the import does
    capsys.readouterr()
    assert marker.exists(), "gate imports contracts/<id>/model.py: it runs that code"


def _flip(value: Any) -> Any:
    """Every verdict and check in a lock document turned to a pass, as a hand edit would."""
    if isinstance(value, dict):
        out = {k: _flip(v) for k, v in value.items()}
        for key, good in (("verdict", "eligible"), ("decision", "pass"), ("passed", True)):
            if key in out and out[key] in ("ineligible", "undecided", "fail", False):
                out[key] = good
        return out
    if isinstance(value, list):
        return [_flip(v) for v in value]
    return value


def test_a_hand_edited_lock_changes_what_gate_concludes(workspace: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    providers = workspace / "providers.yaml"
    assert main(["certify", "--providers", str(providers), "--contracts",
                 str(workspace / "contracts"), "--lock", str(workspace / "providers.lock.json"),
                 "--report", str(workspace / "certification.md"), "--no-progress"]) in (0, 1)
    # local-gateway is certified ineligible; make it an automatic failover target
    text = providers.read_text("utf-8").replace(
        "{provider: local-gateway, failover: manual}", "{provider: local-gateway, failover: auto}")
    providers.write_text(text, "utf-8")
    assert gate(workspace) == 1
    lock = workspace / "providers.lock.json"
    lock.write_text(json.dumps(_flip(json.loads(lock.read_text("utf-8")))), "utf-8")
    # Nothing was certified again: the lock is plain JSON, not a signature. Review its diffs.
    assert gate(workspace) == 0
    capsys.readouterr()
