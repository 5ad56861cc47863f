"""A provider that cannot be reached is no evidence about the contract (QA finding Q3).

A DNS, connect or TLS failure, or a provider refusing the key (401/403), means no sample reached
a model: the pair is undecided (exit 3) with "could not reach … (fix: …)", the calls stop after
a few identical failures, and the lock keeps whatever it held before.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness.contracts.certifier import UNREACHED_STOP
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer
from tests.contracts.conftest import Project, provider

KEY_ENV = "UNREACHABLE_TEST_KEY"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _served(project: Project, **kwargs: object) -> FakeServer:
    """A conformant fake provider on loopback answering the contract's golden outputs."""
    contract = load_contracts(project.contracts)["ticket_triage"]
    app = FakeProvider("openai-chat", answer=golden_answer(contract), **kwargs)  # type: ignore[arg-type]
    return FakeServer(app).start()


def _http(url: str) -> dict:
    return provider(base_url=f"{url}/v1", model="gpt-4o-mini", api_key_env=KEY_ENV)


def _lock(project: Project) -> dict[str, dict]:
    data = json.loads(project.lock_path.read_text())
    return {r["provider"]: r for r in data["certifications"]}


def _certified_then_gone(project: Project) -> FakeServer:
    """'fallback' certified eligible on a loopback fake, which then stops: its port refuses
    connections from now on (the network "broke")."""
    server = _served(project)
    try:
        project.write_providers({"primary": provider(), "fallback": _http(server.url)})
        assert project.cli("certify", "--no-progress") == 0
    finally:
        server.stop()
    return server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-unreachable-test-0000")


def test_a_provider_that_went_away_is_undecided_and_keeps_its_earlier_record(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _certified_then_gone(project)
    before = _lock(project)["fallback"]
    assert before["verdict"] == "eligible"
    capsys.readouterr()

    assert project.cli("certify", "--no-progress") == 3  # unknown, never ineligible (exit 1)
    out = capsys.readouterr().out
    assert "INELIGIBLE" not in out, out
    assert "UNDECIDED" in out and "no sample reached the provider" in out
    assert f"could not reach 'fallback' at {server.url}/v1" in out
    assert "the connection was refused or failed" in out
    assert ("fix: make the provider reachable (network, base_url, API key): check the network "
            "and base_url (") in out and "providers.fallback)" in out
    assert "an earlier record of it, if there is one, stays in the lock file" in out
    after = _lock(project)["fallback"]
    assert after == before  # not overwritten: no evidence came in
    assert project.cli("gate") == 0  # the earlier certification stands (until it expires)


def test_calls_stop_after_a_few_identical_connect_errors(project: Project) -> None:
    project.write_providers({"primary": provider(),
                             "fallback": _http(f"http://127.0.0.1:{_closed_port()}")})
    run = project.certify()
    records = {r.provider: r for r in run.records}
    assert records["fallback"].verdict == "undecided"
    assert records["fallback"].unreached.startswith("could not reach 'fallback'")
    schema = next(c for c in records["fallback"].checks if c.name == "schema")
    assert schema.decision == "unknown" and schema.figures["samples"] == 0
    assert records["fallback"].sampling is not None
    assert records["fallback"].sampling.calls == UNREACHED_STOP  # not 60
    assert run.calls == 60 + UNREACHED_STOP
    assert run.exit_code == 3
    assert records["primary"].verdict == "eligible"  # the reachable one is judged as usual


def test_adaptive_stops_too(project: Project) -> None:
    project.write_providers({"fallback": _http(f"http://127.0.0.1:{_closed_port()}")})
    run = project.certify(adaptive=True)
    assert run.records[0].verdict == "undecided" and run.calls == UNREACHED_STOP


def test_a_refused_key_says_to_check_the_key(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _served(project, expected_api_key="sk-the-right-one-0000")
    try:
        project.write_providers({"fallback": _http(server.url)})
        assert project.cli("certify", "--no-progress") == 3
    finally:
        server.stop()
    out = capsys.readouterr().out
    assert "the key was refused (HTTP 401)" in out
    line = next(n for n, text in enumerate(project.providers_path.read_text().splitlines(), 1)
                if "api_key_env" in text)
    assert f"check the key in ${KEY_ENV} ({project.providers_path}:{line}" in out
    assert "sk-unreachable-test-0000" not in out  # the wrong key is not shown either
    record = _lock(project)["fallback"]  # the lock had none: written, so the gate can say why
    assert record["verdict"] == "undecided" and "the key was refused" in record["unreached"]
    capsys.readouterr()
    assert project.cli("gate") == 3  # unknown, not failed
    gate = capsys.readouterr().out
    assert "UNDECIDED: provider 'fallback'" in gate and "the key was refused (HTTP 401)" in gate
    assert "fix: make the provider reachable (network, base_url, API key)" in gate


def test_a_provider_that_answers_is_still_judged_on_its_answers(
    project: Project, tmp_path: Path
) -> None:
    """An HTTP error from a provider that was reached (429) stays evidence, as before."""
    project.write_providers({"limited": provider("status:429")})
    record = project.certify().records[0]
    assert record.verdict == "ineligible" and not record.unreached


def test_check_keeps_the_earlier_record_too(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` certifies like `certify`: an unreachable provider does not replace its record."""
    _certified_then_gone(project)
    before = _lock(project)["fallback"]
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "double_click.yaml"
    capsys.readouterr()
    project.cli("check", "--certify", "--scenarios", str(scenario))  # (the matrix fails)
    out = capsys.readouterr().out
    results = json.loads((project.root / "reports" / "latest" / "results.json").read_text())
    (fallback,) = [e for e in results["events"]
                   if e["type"] == "certification" and e["provider"] == "fallback"]
    assert (fallback["verdict"], fallback["outcome"]) == ("undecided", "unknown")
    assert "no sample reached the provider" in out and "INELIGIBLE" not in out
    assert "fix: make the provider reachable (network, base_url, API key): check the network" \
        in out
    assert _lock(project)["fallback"] == before
