"""How a drill judges one request from what the fakes recorded (pure: no gateway, no sockets)."""

from __future__ import annotations

from harness.gateways.drill import Deployed, _judge_request
from harness.gateways.litellm_config import LiteLLMDeployment
from harness.providers.recording import Received, RecordingFake


def _deployed(pid: str, port: int, primary: bool) -> Deployed:
    d = LiteLLMDeployment(0, pid, "openai/x", f"http://127.0.0.1:{port}/v1", None, False, {}, {},
                          None)
    return Deployed(pid, d, RecordingFake("openai-chat", name=pid), primary)


def _rec(seq: int, outcome: str, behaviour: str = "conformant", key: bool = False) -> Received:
    headers = {"idempotency-key": "k"} if key else {}
    return Received(seq, float(seq), "/v1/chat/completions", behaviour, False, headers, {}, "t",
                    outcome, None, float(seq) + 0.5)


PRIMARY, FALLBACK = _deployed("p", 1, True), _deployed("f", 2, False)


def judge(records: dict, *, certified: tuple[bool, str] | None, header: str | None = None):
    return _judge_request("t", 200, "", 1.0, None, header, [PRIMARY, FALLBACK], records,
                          lambda pid: certified, [])


def test_refusals_are_not_billed_and_a_certified_fallback_passes() -> None:
    r = judge({"p": [_rec(1, "refused"), _rec(2, "refused")], "f": [_rec(3, "answered")]},
              certified=(True, "certified"), header="http://127.0.0.1:2/v1")
    assert (r.provider_calls, r.billed, r.answered_by, r.fallback) == (3, 1, "f", "f")
    assert r.retries == 2 and r.retries_with_key == 0
    assert r.violations() == [] and r.unknowns() == []


def test_a_timed_out_primary_and_its_fallback_are_two_bills() -> None:
    r = judge({"p": [_rec(1, "late", "slow:1500", key=True)], "f": [_rec(2, "answered", key=True)]},
              certified=(True, "certified"))
    assert r.billed == 2 and r.late_primary == "billed, not delivered"
    assert r.answered_by == "f" and r.retries_with_key == 1  # found from the records: no header
    assert r.violations() == ["one request caused 2 billed completions (p: late; f: answered)"]


def test_an_uncertified_or_unjudgeable_fallback() -> None:
    records = {"p": [_rec(1, "refused")], "f": [_rec(2, "answered")]}
    missing = judge(records, certified=(False, "missing: no certification"))
    assert missing.violations() == [
        "reached fallback 'f', which is not certified: missing: no certification"]
    unknown = judge(records, certified=None)
    assert unknown.violations() == [] and "cannot be judged" in unknown.unknowns()[0]


def test_the_primary_answering_is_no_fallback() -> None:
    r = judge({"p": [_rec(1, "answered")]}, certified=None)
    assert (r.answered_by, r.fallback, r.billed) == ("p", None, 1)
    assert r.violations() == [] and r.unknowns() == []


def test_a_broken_answer_after_the_primary_failed_is_a_violation() -> None:
    """The scripted failure reached the client: failover did not happen (QA Q17)."""
    cut = _judge_request("t", 200, "RemoteProtocolError: incomplete chunked read", 1.0, False,
                         None, [PRIMARY, FALLBACK], {"p": [_rec(1, "cut", "stream-cut")]},
                         lambda pid: None, [])
    assert cut.billed == 1 and not cut.whole_answer
    assert cut.violations() == [
        "failover did not happen: the primary failed and the client received a cut stream "
        "(HTTP 200, then the stream broke off before its end: RemoteProtocolError: incomplete "
        "chunked read)"]
    error = _judge_request("t", 500, "HTTP 500: upstream failed", 1.0, None, None,
                           [PRIMARY, FALLBACK], {"p": [_rec(1, "refused", "status:529")]},
                           lambda pid: None, [])
    assert error.violations() == [
        "failover did not happen: the primary failed and the client received HTTP 500 "
        "(HTTP 500: upstream failed)"]


def test_an_error_before_any_primary_call_is_not_the_failovers_fault() -> None:
    """A refused key (no call reached the primary): the drill is unknown, not failed."""
    r = _judge_request("t", 401, "HTTP 401: bad key", 1.0, None, None, [PRIMARY, FALLBACK], {},
                       lambda pid: None, [])
    assert r.violations() == [] and not r.reached_primary
