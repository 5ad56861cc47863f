"""A provider that answered no call is no evidence about the contract (issue 34).

Every call refused before any answer — a 400 for a missing routing header, a 422, whoever sent
it (the provider, or a gateway in front of it written in providers.yaml without ``via:``) — is
undecided (exit 3), quoting what the server said, and the lock keeps its earlier record. A
provider that answered some calls and refused others is judged on all of them: its refusals
are failed calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.contracts.certifier import UNREACHED_STOP
from harness.contracts.exchange import refusal
from harness.contracts.fakes import golden_answer
from harness.contracts.loader import load_contracts
from harness.providers.behaviours import Behaviour
from harness.providers.classify import ProviderCallError
from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer
from tests.contracts.conftest import Project, provider

KEY_ENV = "REFUSED_TEST_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-refused-test-0000")


class AnswersOnce(FakeProvider):
    """Answers the first call, then refuses every other one with a 400."""

    def __init__(self, answer: Any) -> None:
        super().__init__("openai-chat", answer=answer)
        self.seen = 0

    def behaviour_for(self, headers: dict[str, str]) -> Behaviour:
        self.seen += 1  # the event loop's single thread: no race
        return Behaviour.parse("conformant" if self.seen == 1 else "status:400")


@pytest.mark.parametrize("status", [400, 422])
def test_every_call_refused_is_undecided_quoting_the_refusal_and_keeps_the_lock(
        project: Project, capsys: pytest.CaptureFixture[str], status: int) -> None:
    project.write_providers({"primary": provider(), "fallback": provider()})
    assert project.cli("certify", "--no-progress") == 0
    before = project.lock_path.read_bytes()
    capsys.readouterr()
    project.write_providers({"primary": provider(), "fallback": provider(f"status:{status}")})
    code = project.cli("certify", "--no-progress", "--provider", "fallback")
    out = capsys.readouterr().out
    assert code == 3, out
    assert "INELIGIBLE" not in out and "UNDECIDED" in out
    assert f"every call was refused before any answer (HTTP {status}: " in out, out
    assert project.lock_path.read_bytes() == before  # no evidence: the earlier record stays
    assert f"[{UNREACHED_STOP} calls," in out  # the same refusal three times is enough


def test_refusals_among_answers_are_judged_as_failed_calls(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    answer = golden_answer(load_contracts(project.contracts)["ticket_triage"])
    server = FakeServer(AnswersOnce(answer)).start()
    try:
        project.write_providers({"primary": provider(), "fallback": provider(
            base_url=f"{server.url}/v1", model="gpt-4o-mini", api_key_env=KEY_ENV)})
        code = project.cli("certify", "--no-progress")
    finally:
        server.stop()
    out = capsys.readouterr().out
    assert code == 1, out
    record = next(r for r in json.loads(project.lock_path.read_text())["certifications"]
                  if r["provider"] == "fallback")
    assert record["verdict"] == "ineligible" and not record.get("unreached")
    assert "HTTP 400" in out


def _error(status: int, said: str) -> ProviderCallError:
    return ProviderCallError(f"HTTP {status}: {json.dumps({'error': {'message': said}})}",
                             classification="failed", provider_id="p", status=status)


@pytest.mark.parametrize(("status", "said", "refused"), [
    (400, "Either x-portkey-config or x-portkey-provider header is required", True),
    (400, "Invalid model name passed in model=triage", True),
    (422, "Unprocessable request", True),
    (400, "Invalid schema for response_format 'ticket': 'additionalProperties' is required",
     False),  # the provider read the contract's schema and cannot do it: evidence
    (400, "This model's maximum context length is 8192 tokens", False),
    (429, "Rate limit reached", False),  # says nothing either way: not a refusal
    (500, "Internal error", False),
])
def test_which_4xx_is_a_refusal(status: int, said: str, refused: bool) -> None:
    found = refusal(_error(status, said))
    assert bool(found) is refused, found
    if refused:
        assert found == f"HTTP {status}: {said}"  # the server's words, quoted once
