"""Only a provider fails a provider: an exception in our own checking code is a harness error,
never a failed sample. The record ends undecided (exit 3, not 1), says it is a bug to report,
and the lock file keeps what it had."""

from __future__ import annotations

import json

import pytest

import harness.contracts.exchange as exchange
import harness.contracts.judgement as judgement
import harness.contracts.standing as standing
from harness.contracts.lockfile import read_lock
from tests.contracts.conftest import Project, provider


class OurBug(RuntimeError):
    """Stands for a bug in the harness's own code."""


def boom(*args: object, **kwargs: object) -> object:
    raise OurBug("a bug in our own code")


@pytest.fixture
def certified(project: Project) -> Project:
    """A project whose lock holds an eligible record for 'primary' (certified before the bug)."""
    project.write_providers({"primary": provider()})
    assert project.cli("certify", "--no-progress") == 0
    return project


@pytest.mark.parametrize(("module", "name"), [
    (exchange, "_describe"),  # while processing an answer (per sample)
    (judgement, "schema_check"),  # while judging the samples (per record)
])
def test_a_harness_error_is_unknown_and_keeps_the_lock(
    certified: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    module: object, name: str,
) -> None:
    before = certified.lock_path.read_bytes()
    assert json.loads(before)["certifications"][0]["verdict"] == "eligible"
    capsys.readouterr()
    monkeypatch.setattr(module, name, boom)
    assert certified.cli("certify", "--no-progress", "--report-dir", "after") == 3
    out = capsys.readouterr().out
    assert certified.lock_path.read_bytes() == before  # never replaced by our own bug
    assert "ineligible" not in out
    assert "harness error" in out and "OurBug: a bug in our own code" in out
    assert "this is a bug in failover-harness, not the provider's: report it" in out
    results = json.loads((certified.root / "after" / "latest" / "results.json").read_text())
    event = next(e for e in results["events"] if e.get("type") == "certification")
    assert event["verdict"] == "undecided"


def test_a_harness_error_is_no_failed_sample(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the API: every sample hit our bug, and no check fails: they are undecided,
    with the reason, and the samples are not counted against the provider."""
    project.write_providers({"primary": provider()})
    monkeypatch.setattr(exchange, "_describe", boom)
    run = project.certify()
    (record,) = run.records
    assert record.verdict == "undecided" and standing.has_harness_error(record)
    sampled = {c.name: c for c in record.checks if c.name in judgement.SAMPLED_CHECKS}
    assert set(sampled) == {"schema", "round_trip"}
    for check in sampled.values():
        assert check.decision == "unknown"
        assert check.summary.startswith(standing.HARNESS_ERROR)
        assert "OurBug" in check.summary
    assert not any(t.samples for t in record.inputs.values())  # nothing judged as failed
    assert run.exit_code == 3


def test_a_harness_error_on_one_provider_leaves_the_others_judged(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug hit while judging one pairing makes that one undecided; a failing provider is
    still ineligible on its own evidence."""
    real = judgement.schema_check

    def broken_for_primary(contract, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs["temperature"] == 0.5:
            raise OurBug("only for primary")
        return real(contract, **kwargs)

    monkeypatch.setattr(judgement, "schema_check", broken_for_primary)
    providers = {"primary": provider(temperature=0.5), "proser": provider("prose")}
    project.write_providers(providers)
    records = {r.provider: r for r in project.certify().records}
    assert records["primary"].verdict == "undecided"
    assert standing.has_harness_error(records["primary"])
    assert records["proser"].verdict == "ineligible"
    assert not standing.has_harness_error(records["proser"])


def test_the_lock_never_takes_a_record_a_harness_error_left_undecided(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule sits in the lock (``merge_evidence``), so every command that certifies (certify
    and check) keeps it: not written where the lock had a record, nor where it had none."""
    project.write_providers({"primary": provider(), "second": provider()})
    (good, _) = project.certify().records
    monkeypatch.setattr(exchange, "_describe", boom)
    broken = {r.provider: r for r in project.certify().records}
    lock = read_lock(project.lock_path)
    lock.merge([good])
    assert lock.merge_evidence([broken["primary"], broken["second"]]) == 0
    assert lock.records == {good.key: good}
