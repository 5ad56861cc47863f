"""Record / replay: cassettes certify offline with the same verdicts, and never hold a secret."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import harness.contracts.exchange as exchange
from tests.contracts.conftest import Project, provider

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("cassettes")

SECRET = "sk-test-cassette-0123456789abcdef"


def _providers(project) -> None:
    project.write_providers({
        "primary": provider(api_key_env="TRIAGE_KEY"),
        "claude": provider(kind="anthropic-messages", api_key_env="TRIAGE_KEY"),
        "fences": provider("fenced-json"),
        "ignorer": provider("ignores-system-prompt", kind="anthropic-messages"),
        "cut": provider("truncated"),
        "down": provider("status:503", kind="anthropic-messages"),
        "hang": provider("hang", timeout={"connect": 1, "read": 3}),
    })


def _verdicts(records) -> dict:
    def figures(check):
        return {k: v for k, v in check.figures.items() if k != "latency_p50_s"}

    return {
        r.provider: (
            r.verdict,
            [(c.name, c.passed, c.summary, figures(c), c.evidence) for c in r.checks],
        )
        for r in records
    }


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """One recorded certification (cassettes, lock file, report), made once for this module."""
    root = tmp_path_factory.mktemp("recorded")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRIAGE_KEY", SECRET)
        mp.chdir(root)
        project = Project(root)
        _providers(project)
        assert project.cli("certify", "--record", "--no-progress") == 1
    return root


@pytest.fixture
def recorded(recording: Path, tmp_path: Path, monkeypatch) -> Project:
    """A private copy of the recording for one test."""
    monkeypatch.setenv("TRIAGE_KEY", SECRET)
    root = tmp_path / "project"
    shutil.copytree(recording, root)
    monkeypatch.chdir(root)
    return Project(root, fresh=False)


def test_replay_gives_the_same_verdicts_offline(recorded, monkeypatch) -> None:
    project = recorded
    live = project.workspace().lock.records
    assert len(list((project.root / "cassettes" / "ticket_triage").glob("*.json"))) == 7

    def no_network(*args, **kwargs):
        raise AssertionError("replay must not reach a provider")

    monkeypatch.setattr(exchange, "fake_transport", no_network)
    result = project.certify(mode="replay")
    replayed = {r.key: r for r in result.records}
    assert _verdicts(replayed.values()) == _verdicts(live.values())
    assert {r.mode for r in replayed.values()} == {"replayed"}
    assert {r.mode for r in live.values()} == {"live"}
    why = {r.provider: r.why() for r in replayed.values()}
    assert "code fences" in why["fences"]
    assert "unknown" in why["cut"] and "unknown" in why["hang"]  # cut-off body, timeout
    assert "503" in why["down"]


def test_the_replay_command_says_so_in_the_lock_file(recorded, capsys) -> None:
    project = recorded
    capsys.readouterr()
    assert project.cli("certify", "--replay", "--no-progress") == 1
    assert "certification (replayed from cassettes;" in capsys.readouterr().out
    lock = json.loads(project.lock_path.read_text(encoding="utf-8"))
    assert {c["mode"] for c in lock["certifications"]} == {"replayed"}
    assert project.cli("gate") == 1  # replayed records count; the broken auto links fail


def test_no_secret_reaches_a_cassette_the_lock_file_or_the_report(recorded) -> None:
    project = recorded
    files = [
        *(project.root / "cassettes").rglob("*.json"),
        project.lock_path,
        *(p for p in (project.root / "reports").rglob("*") if p.is_file()),
    ]
    cassette = json.loads(
        (project.root / "cassettes" / "ticket_triage" / "primary.json").read_text("utf-8")
    )
    headers = cassette["exchanges"]["en-outage#0"]["request"]["headers"]
    assert headers["authorization"] == "[REDACTED]"
    for path in files:
        assert SECRET not in path.read_text(encoding="utf-8"), path


def test_a_cassette_from_another_configuration_is_refused(recorded, capsys) -> None:
    project = recorded
    text = project.providers_path.read_text(encoding="utf-8")
    changed = text.replace("max_output_tokens: 512", "max_output_tokens: 400", 1)
    project.providers_path.write_text(changed, encoding="utf-8")
    capsys.readouterr()
    assert project.cli("certify", "--replay", "--no-progress") == 2
    err = capsys.readouterr().err
    assert "cassettes/ticket_triage/primary.json (config_hash)" in err
    assert "recorded with another configuration of provider 'primary'" in err
    assert "fix: record again: failover-harness certify --record" in err


def test_replay_without_cassettes_is_bad_input(project, capsys) -> None:
    project.write_providers({"primary": provider()})
    assert project.cli("certify", "--replay", "--no-progress") == 2
    err = capsys.readouterr().err
    assert "no cassette for provider 'primary' and contract 'ticket_triage'" in err
    assert "fix: record it: failover-harness certify --record" in err


def test_a_refusing_providers_cassette_replays_with_the_same_verdict(project, capsys) -> None:
    """A 401 stops the calls after a few (the rest are not sent): the cassette says so, and
    the replay refuses the same way instead of calling the cassette incomplete."""
    project.write_providers({"primary": provider(), "refused": provider("status:401")})
    assert project.cli("certify", "--record", "--no-progress") == 3
    recorded = project.workspace().lock.get("refused", "ticket_triage")
    cassette = json.loads(
        (project.root / "cassettes" / "ticket_triage" / "refused.json").read_text())
    assert cassette["not_sent"] and len(cassette["exchanges"]) < 60
    capsys.readouterr()
    assert project.cli("certify", "--replay", "--no-progress") == 3
    assert "lacks" not in capsys.readouterr().err
    replayed = project.workspace().lock.get("refused", "ticket_triage")
    assert recorded is not None and replayed is not None
    assert replayed.verdict == recorded.verdict and replayed.why() == recorded.why()
