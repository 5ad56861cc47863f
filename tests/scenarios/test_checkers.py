"""Each checker, on hand-written histories: it passes the right one and catches the wrong one."""

from __future__ import annotations

from harness.scenarios.checkers import CHECKERS, verdict_of
from harness.scenarios.checkers.base import CheckResult
from tests.scenarios.conftest import HistoryBuilder


def check(name: str, h: HistoryBuilder) -> CheckResult:
    return CHECKERS[name](h.ops)


def test_one_job_per_intent(history: HistoryBuilder) -> None:
    history.create("job", created=True).create("job")
    assert check("one_job_per_intent", history).verdict == "held"
    history.create("job~2", created=True)
    result = check("one_job_per_intent", history)
    assert result.verdict == "broken"
    assert "made 2 jobs" in result.violations[0].message
    assert "2 creates" in result.violations[1].message
    assert result.violations[0].ops == (0, 1, 2, 3, 4, 5)


def test_duplicates_get_same_job_refuses_an_error_for_a_duplicate(
        history: HistoryBuilder) -> None:
    history.create("job", created=True, process="alice/1").create("job", process="alice/2")
    assert check("duplicates_get_same_job", history).verdict == "held"
    history.create(None, type_="fail", error="store_unavailable", process="alice/3")
    result = check("duplicates_get_same_job", history)
    assert result.verdict == "broken"
    assert result.violations[0].message == ("1 of 3 duplicates of alice's 'k' was answered "
                                            "409 store_unavailable instead of job job")
    assert result.violations[0].ops == (0, 1, 4, 5)


def test_duplicates_with_no_answer_are_unknown_not_valid(history: HistoryBuilder) -> None:
    history.create("job", created=True).op("alice", "create", {
        "owner": "alice", "key": "k", "fingerprint": "F1"}, "info", {"error": "no_answer"})
    result = check("duplicates_get_same_job", history)
    assert result.verdict == "unknown" and result.unknowns


def test_mismatch_rejected_unchanged(history: HistoryBuilder) -> None:
    history.create("job", created=True).create(None, fp="F2", type_="fail",
                                               error="idempotency_key_reused")
    history.read(fingerprint="F1")
    assert check("mismatch_rejected_unchanged", history).verdict == "held"
    accepted = HistoryBuilder().create("job", created=True).create("job", fp="F2")
    result = check("mismatch_rejected_unchanged", accepted)
    assert result.verdict == "broken"
    assert "instead of answering 409" in result.violations[0].message
    wrong_code = HistoryBuilder().create("job", created=True).create(
        None, fp="F2", type_="fail", error="conflict")
    assert check("mismatch_rejected_unchanged", wrong_code).verdict == "broken"
    changed = HistoryBuilder().create("job", created=True).read(fingerprint="F2")
    assert "fingerprint changed" in check("mismatch_rejected_unchanged",
                                          changed).violations[0].message


def test_owners_isolated(history: HistoryBuilder) -> None:
    history.create("job", created=True).create("bobs", owner="bob", created=True)
    history.read("job", owner="bob", type_="fail", status=404, error="not_found")
    assert check("owners_isolated", history).verdict == "held"
    leak = HistoryBuilder().create("job", created=True).read("job", owner="bob", status="pending")
    assert "bob was answered read on alice's job" in check("owners_isolated",
                                                          leak).violations[0].message
    forbidden = HistoryBuilder().create("job", created=True).read(
        "job", owner="bob", type_="fail", status=403, error="forbidden")
    assert "reveals" in check("owners_isolated", forbidden).violations[0].message
    shared = HistoryBuilder().create("job", created=True).create("job", owner="bob")
    assert "returned alice's job" in check("owners_isolated", shared).violations[0].message


def test_timeout_unknown_blocks(history: HistoryBuilder) -> None:
    history.create("job", created=True).start("A").event("A", "timed_out", state="unknown")
    history.read(status="running").start("B", type_="fail", error="attempt_in_flight")
    history.event("A", "cancelled", state="cancelled").start("C")
    assert check("timeout_unknown_blocks", history).verdict == "held"
    failed = HistoryBuilder().create("job", created=True).start("A").event(
        "A", "timed_out", state="failed")
    assert "never failed" in check("timeout_unknown_blocks", failed).violations[0].message
    ungated = HistoryBuilder().create("job", created=True).start("A").event(
        "A", "timed_out", state="unknown").start("B")
    assert "B started while A was unknown" in check("timeout_unknown_blocks",
                                                   ungated).violations[0].message


def test_open_attempts_bounded(history: HistoryBuilder) -> None:
    history.create("job", created=True).start("A").event("A", "failed", state="failed")
    history.start("B")
    assert check("open_attempts_bounded", history).verdict == "held"
    crashed = HistoryBuilder().create("job", created=True).start("A").op(
        "nemesis", "crash", {"attempt": "A"}, "info", {}).start("B")
    result = check("open_attempts_bounded", crashed)
    assert "B opened on job job while A was still open" in result.violations[0].message
    hedge = HistoryBuilder().create("job", created=True, max_open=2).start("A").start("B")
    assert check("open_attempts_bounded", hedge).verdict == "held"
    hedge.start("C")
    assert "(the policy allows 2)" in check("open_attempts_bounded",
                                             hedge).violations[0].message


def test_completed_job_refuses_attempts(history: HistoryBuilder) -> None:
    history.create("job", created=True).start("A").event("A", "succeeded", state="succeeded",
                                                          outcome="won", payload="P")
    history.start("B", type_="fail", error="job_completed")
    assert check("completed_job_refuses_attempts", history).verdict == "held"
    history.start("C")
    assert "had already succeeded" in check("completed_job_refuses_attempts",
                                            history).violations[0].message


def _two_claims(second: str) -> HistoryBuilder:
    h = HistoryBuilder().create("job", created=True, max_open=2).start("A").start("B")
    h.event("B", "succeeded", state="succeeded", outcome="won", payload="PB")
    h.event("A", "succeeded", state="succeeded", outcome=second, payload="PA")
    return h


def test_one_winner_per_job() -> None:
    good = _two_claims("lost").read(completed_by="B", result_sha256="PB")
    assert check("one_winner_per_job", good).verdict == "held"
    bad = _two_claims("won")
    assert "attempts A and B both won the same job (job)" in check("one_winner_per_job",
                                                  bad).violations[0].message
    misnamed = _two_claims("lost").read(completed_by="A")
    assert "names A as its winner, but B won" in check("one_winner_per_job",
                                                      misnamed).violations[0].message


def test_cancelled_never_wins(history: HistoryBuilder) -> None:
    history.create("job", created=True).start("A").event("A", "cancelled", state="cancelled")
    history.event("A", "succeeded", state="cancelled", outcome="lost", payload="PA")
    assert check("cancelled_never_wins", history).verdict == "held"
    bad = HistoryBuilder().create("job", created=True).start("A").event(
        "A", "cancelled", state="cancelled").event("A", "succeeded", state="succeeded",
                                                   outcome="won", payload="PA")
    messages = [v.message for v in check("cancelled_never_wins", bad).violations]
    assert messages == ["A was cancelled, then its result won the job"]
    moved = HistoryBuilder().create("job", created=True).start("A").event(
        "A", "cancelled", state="cancelled").event("A", "succeeded", state="succeeded",
                                                   outcome="lost", payload="PA")
    assert "must stay cancelled" in check("cancelled_never_wins", moved).violations[0].message


def test_late_result_discarded_recorded() -> None:
    good = _two_claims("lost").read(completed_by="B", result_sha256="PB").races(
        races=[{"attempt": "A", "payload_sha256": "PA", "winner": "B"}])
    assert check("late_result_discarded_recorded", good).verdict == "held"
    unrecorded = _two_claims("lost").races(races=[])
    assert "not recorded" in check("late_result_discarded_recorded",
                                   unrecorded).violations[0].message
    unread = _two_claims("lost")
    assert check("late_result_discarded_recorded", unread).verdict == "unknown"
    merged = _two_claims("lost").read(completed_by="B", result_sha256="PA").races(
        races=[{"attempt": "A", "payload_sha256": "PA"}])
    assert "now holds A's late result" in check("late_result_discarded_recorded",
                                                merged).violations[0].message
    refused = HistoryBuilder().create("job", created=True, max_open=2).start("A").start("B")
    refused.event("B", "succeeded", state="succeeded", outcome="won", payload="PB")
    refused.event("A", "succeeded", state="", type_="fail", error="invalid_transition")
    assert "was refused" in check("late_result_discarded_recorded",
                                  refused).violations[0].message


def test_results_never_overwritten() -> None:
    good = _two_claims("lost").read(completed_by="B", result_sha256="PB")
    assert check("results_never_overwritten", good).verdict == "held"
    bad = _two_claims("won").read(completed_by="A", result_sha256="PA")
    assert "result changed: it was B's" in check("results_never_overwritten",
                                                 bad).violations[0].message


def test_versions_only_rise(history: HistoryBuilder) -> None:
    history.create("job", created=True).read(version=1).read(version=2)
    assert check("versions_only_rise", history).verdict == "held"
    history.read(version=1)
    assert "went down from 2 to 1" in check("versions_only_rise",
                                            history).violations[0].message
    stuck = _two_claims("lost").read(version=1)
    assert "after a claim that read version 1 won" in check(
        "versions_only_rise", stuck).violations[0].message


def test_scripted_outcomes(history: HistoryBuilder) -> None:
    history.op("alice", "create", {"owner": "alice", "key": "k", "fingerprint": "F",
                                   "expect": {"created": True}}, "ok", {"created": True})
    history.op("alice", "create", {"owner": "alice", "key": "k", "fingerprint": "G",
                                   "expect": {"error": "idempotency_key_reused"}}, "fail",
               {"status": 409, "error": "idempotency_key_reused"})
    assert check("scripted_outcomes", history).verdict == "held"
    history.op("alice", "races", {"owner": "alice", "job": "job", "expect": {"count": 1}},
               "ok", {"races": []})
    history.op("alice", "read", {"owner": "alice", "job": "job", "expect": {"status": "x"}},
               "fail", {"status": 503, "error": "store_unavailable"})
    messages = [v.message for v in check("scripted_outcomes", history).violations]
    assert messages == ["alice races: expected 1 listed, got 0",
                        "alice read: expected success, got 503 store_unavailable"]


def test_a_store_that_refuses_everything_does_not_pass(history: HistoryBuilder) -> None:
    history.op("alice", "create", {"owner": "alice", "key": "k", "fingerprint": "F",
                                   "expect": {"created": True}}, "fail",
               {"status": 503, "error": "store_unavailable"})
    results = [CHECKERS[name](history.ops) for name in CHECKERS]
    assert verdict_of(results) == "broken"


def test_checkers_are_pure_and_deterministic() -> None:
    h = _two_claims("won").read(completed_by="A", result_sha256="PA")
    before = list(h.ops)
    first = [CHECKERS[name](h.ops) for name in CHECKERS]
    second = [CHECKERS[name](h.ops) for name in CHECKERS]
    assert first == second and h.ops == before
