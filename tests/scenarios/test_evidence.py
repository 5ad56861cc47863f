"""No verdict without evidence, and the oracle rule: a target that refuses everything passes no
scenario; a checker that saw nothing of what it judges is unknown; expectations relative to what
the history showed (versions), records found by id, digests compared only under a declared
scheme; the first served retry after a handler failure decides."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.domain.clock import ManualClock
from harness.domain.errors import ConfigError
from harness.scenarios.checkers import CHECKERS, run_checkers
from harness.scenarios.checkers.base import TOKENS_FIX
from harness.scenarios.loader import load_scenario
from harness.scenarios.model import CAPABILITIES, Scenario
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets.base import Reply, Target, TargetSession
from harness.scenarios.targets.http import HttpTarget
from tests.scenarios.conftest import HistoryBuilder


class Refusing(TargetSession):
    """Every operation is answered ``status`` with a problem body."""

    def __init__(self, status: int) -> None:
        self.reply = Reply(status, {"code": {401: "unauthenticated", 403: "forbidden",
                                             404: "not_found"}.get(status, "internal_error")})

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        return self.reply

    def get_job(self, owner: str, job_id: str) -> Reply:
        return self.reply

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
        return self.reply

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply:
        return self.reply

    def list_attempts(self, owner: str, job_id: str) -> Reply:
        return self.reply

    def list_races(self, owner: str, job_id: str) -> Reply:
        return self.reply


class RefusingTarget(Target):
    """A target with every capability that refuses every request."""

    kind = "http"
    capabilities = frozenset(CAPABILITIES)

    def __init__(self, status: int) -> None:
        self.status = status

    @property
    def description(self) -> str:
        return f"refuses-{self.status}"

    @contextmanager
    def session(self, clock: ManualClock, run_id: str,
                concurrency: int) -> Iterator[TargetSession]:
        yield Refusing(self.status)


@pytest.mark.parametrize("status", [401, 403, 404, 500])
def test_a_target_refusing_everything_passes_no_shipped_scenario(
        shipped: dict[str, Scenario], status: int) -> None:
    statuses = {name: run_scenario(s, RefusingTarget(status)).status
                for name, s in shipped.items()}
    assert {n for n, st in statuses.items() if st == "held"} == set()


def test_a_step_that_could_not_run_says_why_and_what_to_fix(
        shipped: dict[str, Scenario]) -> None:
    result = run_scenario(shipped["timeout_unknown"], RefusingTarget(401))
    assert result.status == "unknown"
    assert result.unrun[0]["step"] == 2
    assert result.unrun[0]["why"].startswith(
        "step 2 (line 14, start A) did not run: step 1 (line 13, create job) was refused 401 "
        "unauthenticated")
    assert result.fix == TOKENS_FIX and "--tokens-file" in TOKENS_FIX
    assert result.reason is not None and "refused 401" in result.reason


def test_an_expected_reply_that_never_came_is_unknown(
        shipped: dict[str, Scenario]) -> None:
    class NoDispatch(Refusing):
        """Jobs and attempts are made; every event is refused."""

        def __init__(self) -> None:
            super().__init__(409)

        def create_job(self, owner: str, key: str, body_text: str) -> Reply:
            return Reply(201, {"id": "j1", "status": "pending", "version": 1})

        def get_job(self, owner: str, job_id: str) -> Reply:
            return Reply(200, {"id": "j1", "status": "running", "version": 1})

        def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
            return Reply(201, {"id": "a1", "job_id": "j1", "state": "starting",
                               "read_version": 1})

    class Target2(RefusingTarget):
        @contextmanager
        def session(self, clock: ManualClock, run_id: str,
                    concurrency: int) -> Iterator[TargetSession]:
            yield NoDispatch()

    result = run_scenario(shipped["crash_mid_attempt"], Target2(409))
    missing = [u["why"] for u in result.unrun]
    assert any("its succeeded reply was expected but never came: step 8" in w
               and "dispatched event was refused 409" in w for w in missing), missing
    assert result.status in ("broken", "unknown")


def test_a_checker_that_saw_nothing_it_judges_is_unknown_when_evidence_is_required(
        history: HistoryBuilder) -> None:
    history.create("job", created=True)
    lenient = CHECKERS["one_winner_per_job"](history.ops)
    assert lenient.verdict == "held" and lenient.seen == 0
    strict = CHECKERS["one_winner_per_job"](history.ops, None, True)
    assert strict.verdict == "unknown"
    assert strict.unknowns == ("saw no claim (an attempt's result answered won or lost): there "
                               "was nothing to judge",)
    assert strict.to_json()["evidence"] == {
        "needs": "claim (an attempt's result answered won or lost)", "seen": 0}
    optional = run_checkers(["one_winner_per_job"], history.ops, require_evidence=True,
                            optional={"one_winner_per_job"})
    assert optional[0].verdict == "held"


def test_a_violation_resting_on_a_401_is_not_evidence(history: HistoryBuilder) -> None:
    history.create("job", created=True, process="alice/1")
    history.op("alice/2", "create", {"owner": "alice", "key": "k", "fingerprint": "F1"}, "fail",
               {"status": 401, "error": "unauthenticated"})
    result = CHECKERS["duplicates_get_same_job"](history.ops)
    assert result.verdict == "unknown"
    assert "refused 401 unauthenticated: not evidence against the service" in result.unknowns[0]
    assert result.fixes == (TOKENS_FIX,)
    history.create(None, type_="fail", error="store_unavailable", process="alice/3")
    assert CHECKERS["duplicates_get_same_job"](history.ops).verdict == "broken"


# -- relative expectations ------------------------------------------------------------------------
def _versions(created: int, read: int, expect: Any) -> HistoryBuilder:
    h = HistoryBuilder()
    h.op("alice", "create", {"owner": "alice", "key": "k", "fingerprint": "F1"}, "ok",
         {"job": "job", "created": True, "version": created})
    h.op("alice", "read", {"owner": "alice", "job": "job", "expect": {"version": expect}}, "ok",
         {"job": "job", "version": read})
    return h


@pytest.mark.parametrize(("created", "read", "expect", "verdict"), [
    (0, 0, "unchanged", "held"),      # a service numbering from 0
    (1, 1, "unchanged", "held"),
    (0, 1, "unchanged", "broken"),
    (0, 2, "rose", "held"),           # a service stepping by 2
    (4, 4, "rose", "broken"),
    (0, 0, 1, "broken"),              # absolute: compared as written
])
def test_version_expectations_are_relative_to_what_the_job_showed(
        created: int, read: int, expect: Any, verdict: str) -> None:
    result = CHECKERS["scripted_outcomes"](_versions(created, read, expect).ops)
    assert result.verdict == verdict, result


def test_a_relative_version_with_nothing_before_it_is_unknown() -> None:
    h = HistoryBuilder()
    h.op("alice", "read", {"owner": "alice", "job": "job", "expect": {"version": "rose"}}, "ok",
         {"job": "job", "version": 3})
    result = CHECKERS["scripted_outcomes"](h.ops)
    assert result.verdict == "unknown" and "showed no version before it" in result.unknowns[0]


def test_the_loader_warns_about_absolute_versions_and_names_the_line(
        write_scenario: Callable[[str, str], Path]) -> None:
    path = write_scenario("abs", "name: abs\nintents: {i: {contract: c, input: {}}}\nsteps:\n"
                          "  - {at: 0, create: {key: k, intent: i}, save: job}\n"
                          "  - {at: 1, read: job, expect: {version: 1}}\n"
                          "checkers: [one_job_per_intent]\n")
    scenario = load_scenario(path)
    assert len(scenario.warnings) == 1
    assert scenario.warnings[0].startswith(f"{path}:5: expects an absolute version (1)")
    assert "write version: unchanged or version: rose" in scenario.warnings[0]
    bad = write_scenario("bad", "name: bad\nintents: {i: {contract: c, input: {}}}\nsteps:\n"
                         "  - {at: 0, create: {key: k, intent: i}, save: job}\n"
                         "  - {at: 1, read: job, expect: {version: risen}}\n"
                         "checkers: [one_job_per_intent]\n")
    with pytest.raises(ConfigError) as caught:
        load_scenario(bad)
    assert caught.value.line == 5 and "'risen' is not allowed" in caught.value.message
    assert "unchanged, rose" in (caught.value.fix or "")


def test_shipped_scenarios_assert_no_absolute_version(shipped: dict[str, Scenario]) -> None:
    assert {n: s.warnings for n, s in shipped.items() if s.warnings} == {}


def test_a_reuse_expectation_follows_the_targets_fingerprint_rule() -> None:
    def run(fp: str, type_: str, value: dict[str, Any]) -> str:
        h = HistoryBuilder().create("job", created=True, fp="F1")
        h.op("alice", "create", {"owner": "alice", "key": "k", "fingerprint": fp,
                                 "expect": {"reuse_of": "job"}}, type_, value)
        return CHECKERS["scripted_outcomes"](h.ops).verdict

    replay = {"job": "job", "created": False}
    refusal = {"status": 422, "error": "idempotency_key_reused"}
    assert run("F1", "ok", replay) == "held"          # canonical: the same intent, replayed
    assert run("F1", "fail", refusal) == "broken"
    assert run("F2", "fail", refusal) == "held"       # bytes: another body, refused
    assert run("F2", "ok", replay) == "broken"


# -- records by id, digests by declared scheme ----------------------------------------------------
def _late(race: dict[str, Any], scheme: str | None) -> HistoryBuilder:
    h = HistoryBuilder().create("job", created=True, max_open=2)
    h.start("A").start("B")
    h.event("B", "succeeded", state="succeeded", outcome="won", payload="PB")
    h.event("A", "succeeded", state="succeeded", outcome="lost", payload="PA")
    invoke: dict[str, Any] = {"owner": "alice", "job": "job"}
    if scheme:
        invoke["race_digest"] = scheme
    h.op("alice", "races", invoke, "ok", {"races": [race]})
    return h


def test_a_race_is_found_by_the_attempts_id_whatever_the_digest() -> None:
    theirs = {"attempt": "A", "winner": "B", "reason": "lost", "payload_sha256": "raw-body-hash"}
    assert CHECKERS["late_result_discarded_recorded"](_late(theirs, None).ops).verdict == "held"
    declared = CHECKERS["late_result_discarded_recorded"](
        _late(theirs, "sha256-rfc8785").ops)
    assert declared.verdict == "broken" and "not the sha256-rfc8785 digest" in \
        declared.violations[0].message
    ours = {**theirs, "payload_sha256": "PA"}
    assert CHECKERS["late_result_discarded_recorded"](
        _late(ours, "sha256-rfc8785").ops).verdict == "held"
    missing = {**theirs, "attempt": "?attempt"}
    assert CHECKERS["late_result_discarded_recorded"](_late(missing, None).ops).verdict == \
        "broken"
    wrong_winner = {**theirs, "winner": "A"}
    assert "names A as the winner, but B won" in CHECKERS["late_result_discarded_recorded"](
        _late(wrong_winner, None).ops).violations[0].message


# -- the first served retry decides ---------------------------------------------------------------
def test_the_first_served_retry_after_a_handler_failure_decides() -> None:
    base = {"owner": "alice", "key": "k", "fingerprint": "F1"}
    h = HistoryBuilder()
    h.op("nemesis", "fault", {"fault": "handler_error", "policy": "retry"}, "ok", {"armed": True})
    h.op("alice", "create", base, "fail", {"status": 500, "error": "http_500"})
    busy = {"status": 409, "error": "still_in_progress", "busy": {"in_flight": 50},
            "busy_ms": 300.0}
    h.op("alice", "create", base, "fail", busy)
    h.op("alice", "create", base, "ok", {"job": "job", "created": True})
    assert CHECKERS["retry_after_failure_served"](h.ops).verdict == "held"
    stuck = HistoryBuilder()
    stuck.ops = h.ops[:6]
    stuck.op("alice", "create", base, "fail", busy)
    result = CHECKERS["retry_after_failure_served"](stuck.ops)
    assert result.verdict == "broken"
    assert "all 2 retries were refused" in result.violations[0].message


# -- terms and capabilities -----------------------------------------------------------------------
def test_promises_name_the_profiles_own_statuses(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nconflict: {status: 422}\nlocked: {statuses: [423]}\n"
                       "operations:\n  create_job: {method: POST, path: /j, key_header: K}\n"
                       "  get_job: {path: '/j/{job_id}'}\n", encoding="utf-8")
    from harness.scenarios.targets import open_target

    with open_target("http://127.0.0.1:9", profile=profile) as target:
        terms = target.terms()
    result = CHECKERS["mismatch_rejected_unchanged"]([], terms)
    assert "(422 (key reused))" in result.promise and "409" not in result.promise
    assert "after 423 busy/locked" in CHECKERS["loser_answers_allowed"]([], terms).promise


def test_replicas_need_two_urls(tmp_path: Path) -> None:
    tokens = tmp_path / "t.yaml"
    tokens.write_text("tok: alice\n", encoding="utf-8")
    one = HttpTarget("http://127.0.0.1:9", tokens_file=tokens)
    two = HttpTarget("http://127.0.0.1:9,http://127.0.0.1:10", tokens_file=tokens)
    assert "replicas" not in one.capabilities and "replicas" in two.capabilities


# -- a request the service never answered ---------------------------------------------------------
def _unanswered_dispatch(read_status: str) -> HistoryBuilder:
    h = HistoryBuilder()
    h.create("job", created=True)
    h.start("A")
    h.op("worker:A", "dispatched", {"owner": "alice", "attempt": "A"}, "info",
         {"status": 0, "error": None, "detail": "RemoteProtocolError"})
    h.op("worker:C", "start", {"owner": "alice", "job": "job", "provider": "p", "attempt": "C",
                               "expect": {"error": "job_completed"}}, "fail",
         {"status": 409, "error": "attempt_in_flight", "blocking": "A"})
    h.op("alice", "read", {"owner": "alice", "job": "job", "expect": {"status": "succeeded"}},
         "ok", {"job": "job", "status": read_status})
    return h


def test_an_expectation_after_an_unanswered_write_on_its_job_is_unknown_not_violated() -> None:
    """qa Q21: A's dispatched got no answer, so A's result was never sent: the job still
    running and C refused 'in flight' are what the script's gap made, not the service."""
    result = CHECKERS["scripted_outcomes"](_unanswered_dispatch("running").ops)
    assert result.verdict == "unknown", result
    assert not result.violations
    assert any("got no answer before it" in u and "op 4 (worker:A dispatched)" in u
               for u in result.unknowns), result.unknowns
    assert result.fixes and "run again" in result.fixes[0]


def test_an_unanswered_write_on_another_job_does_not_hide_a_violation() -> None:
    h = _unanswered_dispatch("succeeded")
    h.create("other", key="k2", created=True)
    h.op("alice", "read", {"owner": "alice", "job": "other", "expect": {"status": "failed"}},
         "ok", {"job": "other", "status": "pending"})
    result = CHECKERS["scripted_outcomes"](h.ops)
    assert result.verdict == "broken"
    assert [v.message for v in result.violations] == [
        "alice read: expected status: 'failed', got 'pending'"]
