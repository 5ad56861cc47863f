"""``check``, ``certify`` and ``gate`` as entry points: the providers are certified only where the
lock has no current record for a link (or when asked), otherwise check gates on the lock and
says so (issue 34)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from harness.campaign.certification import CertifySettings, run_certify
from harness.campaign.check import CheckSettings, run_check
from harness.campaign.gate import GateSettings, run_gate
from harness.contracts.events import Certification, GateVerdict
from harness.domain.stream import Note, collect
from harness.gateways.options import ProvidersSource
from harness.scenarios.events import DetectionMatrix, ScenarioRun
from tests.contracts.conftest import SHIPPED, provider


@pytest.fixture
def source(tmp_path: Path) -> ProvidersSource:
    """A project of two conformant fakes on one auto chain, outside the working directory."""
    project = tmp_path / "project"
    shutil.copytree(SHIPPED, project / "contracts" / "ticket_triage")
    path = project / "providers.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "providers": {"first": provider(), "second": provider()},
        "chains": {"ticket_triage": [{"provider": "first", "failover": "auto"},
                                     {"provider": "second", "failover": "auto"}]}}),
        encoding="utf-8")
    return ProvidersSource(providers=path)


def _check(source: ProvidersSource, tmp_path: Path, **kwargs: object) -> tuple[list, str]:
    # the shipped scenarios (every mutant must be caught), no project scenarios/ folder
    settings = CheckSettings(source=source, seed=7, providers_explicit=True, **kwargs)
    return collect(run_check(settings, folder=lambda: tmp_path / "report"))


def _certified(messages: list) -> list[str]:
    return sorted(m.provider for m in messages if isinstance(m, Certification))


def test_gate_without_a_lock_is_unknown_and_certify_makes_it_pass(
        source: ProvidersSource, nowhere: Path) -> None:
    messages, verdict = collect(run_gate(GateSettings(source=source)))
    gate = next(m for m in messages if isinstance(m, GateVerdict))
    assert verdict == "unknown" and {p.state for p in gate.problems} == {"missing"}

    messages, verdict = collect(run_certify(CertifySettings(source=source)))
    assert verdict == "pass" and _certified(messages) == ["first", "second"]
    assert collect(run_gate(GateSettings(source=source)))[1] == "pass"


def test_check_certifies_only_what_the_lock_cannot_speak_for(
        source: ProvidersSource, tmp_path: Path, nowhere: Path) -> None:
    first, verdict = _check(source, tmp_path)
    assert verdict == "pass" and _certified(first) == ["first", "second"]
    assert any(isinstance(m, ScenarioRun) for m in first)
    assert any(isinstance(m, DetectionMatrix) for m in first)

    again, verdict = _check(source, tmp_path)  # nothing changed: gate on the lock
    assert verdict == "pass" and _certified(again) == []
    assert isinstance(again[-1], GateVerdict) and not again[-1].problems
    assert any(isinstance(m, Note) and "not certifying" in m.text for m in again)

    assert _certified(_check(source, tmp_path, certify="always")[0]) == ["first", "second"]

    # a changed config makes one link stale: only that one is certified again
    doc = yaml.safe_load(source.providers.read_text(encoding="utf-8"))
    doc["providers"]["second"]["max_output_tokens"] = 256
    source.providers.write_text(yaml.safe_dump(doc), encoding="utf-8")
    stale, verdict = _check(source, tmp_path)
    assert verdict == "pass" and _certified(stale) == ["second"]


def test_check_never_certifies_when_told_not_to(
        source: ProvidersSource, tmp_path: Path, nowhere: Path) -> None:
    messages, verdict = _check(source, tmp_path, certify="never")
    assert _certified(messages) == [] and verdict == "unknown"  # no lock: the gate cannot say
