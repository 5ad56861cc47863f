"""The detection checkers on hand-written histories: side effects, loser answers (and their
histogram), liveness after a handler failure, replay fidelity and the error policy."""

from __future__ import annotations

from typing import Any

from harness.scenarios.checkers import CHECKERS
from harness.scenarios.checkers.losers import loser_classes
from harness.scenarios.history import Op


class H:
    """A history written op by op: ``add(process, f, invoke_value, type, completion_value)``."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, process: str, f: str, invoke: dict[str, Any], type_: str = "ok",
            value: dict[str, Any] | None = None) -> H:
        n = len(self.ops)
        self.ops.append(Op(n, 0.0, "w", process, "invoke", f, invoke))
        self.ops.append(Op(n + 1, 0.0, "w", process, type_, f, value or {}))  # type: ignore[arg-type]
        return self

    def counter(self, at: str, count: int) -> H:
        return self.add("observer", "side_effects", {"at": at}, "ok", {"count": count})

    def create(self, process: str = "alice", *, key: str = "k", fp: str = "F", type_: str = "ok",
               **value: Any) -> H:
        return self.add(process, "create", {"owner": "alice", "key": key, "fingerprint": fp,
                                            "max_open_attempts": 1}, type_, value)

    def group(self, answers: list[dict[str, Any]], key: str = "k") -> H:
        """A concurrent group: all invokes, then the completions (as the runner writes it)."""
        base = len(self.ops)
        for i in range(len(answers)):
            self.ops.append(Op(base + i, 0.0, "w", f"alice/{i + 1}", "invoke", "create",
                               {"owner": "alice", "key": key, "fingerprint": "F",
                                "max_open_attempts": 1}))
        for i, answer in enumerate(answers):
            type_ = answer.pop("type", "ok")
            self.ops.append(Op(base + len(answers) + i, 0.0, "w", f"alice/{i + 1}", type_,
                               "create", answer))
        return self

    def check(self, name: str) -> Any:
        return CHECKERS[name](self.ops)


CREATED: dict[str, Any] = {"job": "job", "created": True}
SAME: dict[str, Any] = {"job": "job", "created": False, "replayed": True}


def test_one_side_effect_per_click_reads_the_counter() -> None:
    fine = H().counter("start", 10).group([dict(CREATED), dict(SAME)]).counter("end", 11)
    assert fine.check("one_side_effect_per_click").verdict == "held"
    twice = H().counter("start", 10).group([dict(CREATED), dict(SAME)]).counter("end", 12)
    result = twice.check("one_side_effect_per_click")
    assert result.verdict == "broken"
    assert result.violations[0].message.startswith(
        "1 click answered a job made 2 side effects (the counter went 10 → 12)")
    none = H().counter("start", 3).create(**CREATED).counter("end", 3)
    assert "never made" in none.check("one_side_effect_per_click").violations[0].message


def test_without_a_counter_side_effects_are_unknown() -> None:
    result = H().create(**CREATED).check("one_side_effect_per_click")
    assert result.verdict == "unknown" and "side_effects:" in result.unknowns[0]


def test_loser_answers_are_classified_and_judged() -> None:
    history = H().counter("start", 0).group([
        dict(CREATED),
        dict(SAME),
        {**SAME, "replayed": False, "busy": {"in_flight": 2}, "busy_ms": 30.0},
        {"type": "fail", "status": 409, "error": "http_409"},
        {"type": "fail", "status": 500, "error": "http_500", "body": "Traceback: boom"},
        {"type": "fail", "status": 422, "error": "idempotency_key_reused"},
        {"type": "fail", "status": 409, "error": "still_in_progress", "busy": {"in_flight": 9}},
        {"job": "other", "created": False},
    ]).counter("end", 1)
    assert loser_classes(history.ops) == {
        "created": 1, "same job": 1, "in flight → same job": 1, "409 conflict": 1, "5xx": 1,
        "rejected as another payload": 1, "still in progress": 1, "other job": 1}
    result = history.check("loser_answers_allowed")
    messages = [v.message for v in result.violations]
    assert result.verdict == "broken" and len(messages) == 5
    assert any("409 conflict — a refusal for a request that never ran" in m for m in messages)
    assert any('a server error; body: "Traceback: boom"' in m for m in messages)
    assert any("as a different payload, though the body was identical" in m for m in messages)


def test_locked_losers_are_allowed_only_without_an_extra_side_effect() -> None:
    locked = {**SAME, "busy": {"locked": 3}, "busy_ms": 12.0}
    fine = H().counter("start", 0).group([dict(CREATED), dict(locked)]).counter("end", 1)
    assert fine.check("loser_answers_allowed").verdict == "held"
    extra = H().counter("start", 0).group([dict(CREATED), dict(locked)]).counter("end", 2)
    assert "extra side effect" in extra.check("loser_answers_allowed").violations[0].message
    blind = H().group([dict(CREATED), dict(locked)])
    assert blind.check("loser_answers_allowed").verdict == "unknown"


def _after_failure(*retries: dict[str, Any], policy: str = "retry") -> H:
    history = H().add("nemesis", "fault", {"fault": "handler_error", "policy": policy,
                                           "lease_ms": 500}, "ok", {"armed": True})
    history.create(type_="fail", status=500, error="http_500", body='{"error": "boom"}')
    for retry in retries:
        retry = dict(retry)
        history.create(type_=retry.pop("type", "ok"), **retry)
    return history


def test_a_key_stuck_after_a_handler_failure_is_reported_with_how_long() -> None:
    stuck = _after_failure({"type": "fail", "status": 409, "error": "still_in_progress",
                            "busy": {"in_flight": 14}, "busy_ms": 1012.5, "lease_ms": 500})
    result = stuck.check("retry_after_failure_served")
    assert result.verdict == "broken"
    assert result.violations[0].message == (
        "after the handler failed, alice's key 'k' was still held in progress 1012.5 ms later "
        "(lease 500 ms): the retry was refused 14 times — the key is stuck")
    lease = stuck.check("in_progress_within_lease")
    assert "held in progress for at least 1012.5 ms (from the first 'in progress' answer to " \
           "the sending of the last), past the lease of 500 ms" in lease.violations[0].message
    served = _after_failure(dict(CREATED), dict(SAME))
    assert served.check("retry_after_failure_served").verdict == "held"
    assert served.check("in_progress_within_lease").verdict == "held"


def test_a_fault_that_did_not_fail_the_request_is_unknown() -> None:
    history = H().add("nemesis", "fault", {"fault": "handler_error", "policy": "retry"}, "ok",
                      {"armed": True}).create(**CREATED)
    assert history.check("retry_after_failure_served").verdict == "unknown"


def test_the_fault_fails_whichever_concurrent_copy_ran_first() -> None:
    """Copies sent together after the fault: the second one's handler ran first and failed; the
    first was told "in progress", then served. The retry after the failure is judged."""
    history = H().add("nemesis", "fault", {"fault": "handler_error", "policy": "retry"}, "ok",
                      {"armed": True})
    history.group([{"type": "fail", "status": 409, "error": "still_in_progress"},
                   {"type": "fail", "status": 500, "error": "http_500"}])
    history.create(**CREATED)
    served = history.check("retry_after_failure_served")
    assert served.verdict == "held" and served.seen == 1, served
    stuck = H().add("nemesis", "fault", {"fault": "handler_error", "policy": "retry"}, "ok",
                    {"armed": True})
    stuck.group([dict(CREATED), {"type": "fail", "status": 500, "error": "http_500"}])
    stuck.create(type_="fail", status=409, error="still_in_progress", busy={"in_flight": 3})
    assert stuck.check("retry_after_failure_served").verdict == "broken"
    # sent one after another, only the first create after the fault is the one it aimed at
    sequential = H().add("nemesis", "fault", {"fault": "handler_error"}, "ok", {"armed": True})
    sequential.create(**CREATED).create(type_="fail", status=500, error="http_500")
    assert sequential.check("retry_after_failure_served").verdict == "unknown"


def test_the_error_policy_decides_what_a_retry_may_get() -> None:
    cached = {"type": "fail", "status": 500, "error": "http_500", "replayed": True}
    bad = _after_failure(cached).check("error_replay_follows_policy")
    assert bad.verdict == "broken"
    assert "was stored and answered again to the retry and marked it a replay" in \
        bad.violations[0].message
    assert _after_failure(cached, policy="final").check(
        "error_replay_follows_policy").verdict == "held"
    ran = _after_failure(dict(CREATED), policy="final").check("error_replay_follows_policy")
    assert "ran again and got job job" in ran.violations[0].message
    assert _after_failure(dict(CREATED)).check("error_replay_follows_policy").verdict == "held"


def test_an_identical_retry_must_be_the_same_job_marked_as_a_replay() -> None:
    good = H().create(**CREATED).create(**SAME)
    assert good.check("identical_retry_replayed").verdict == "held"
    unmarked = H().create(**CREATED).create(job="job", created=True, replayed=False)
    assert "without saying it is a replay" in \
        unmarked.check("identical_retry_replayed").violations[0].message
    rejected = H().create(**CREATED).create(type_="fail", status=422,
                                            error="idempotency_key_reused")
    assert "rejected as a different payload (422)" in \
        rejected.check("identical_retry_replayed").violations[0].message
    another = H().create(**CREATED).create(job="?job", created=True, replayed=False)
    assert "made another job (?job, not job)" in \
        another.check("identical_retry_replayed").violations[0].message
    silent = H().create(job="job", created=True).create(job="job", created=False)
    assert silent.check("identical_retry_replayed").verdict == "unknown"
