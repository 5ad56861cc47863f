"""The workloads explore races: each draws a plan (who sends what, when) and names its checkers.

==============  ===========================================================================
double-click    2..N tabs send the same create at once (some read their job after); bob may
                send alice's key, or try to read her job; a retry comes after the race
mismatch        2..N creates with one key, at least one with another body
claims          a hedged job with attempts A and B running; their replies (or errors) arrive
                at drawn virtual times; an operator may cancel one; a reader may read
timeouts        one attempt A; the worker times out at 10 s (then may retry with B); A's
                reply arrives at a drawn time or never; an operator may cancel A
==============  ===========================================================================

``all`` draws one of them per schedule. ``clients`` bounds how many clients send creates at
once (double-click, mismatch) and how many readers join (claims, timeouts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.explore.plan import OWN, Draw, OpSpec, Plan, TimerSpec

ASK = {"contract": "ticket_triage", "input": {"ticket": "printer on fire", "customer": 42}}
ASK_OTHER = {"contract": "ticket_triage", "input": {"ticket": "printer on fire", "customer": 43}}
HEDGED = {**ASK, "policy": {"max_open_attempts": 2}}
RESULT_A = {"label": "hardware", "from": "primary"}
RESULT_B = {"label": "software", "from": "fallback"}
PROVIDER_ERROR = {"code": "rate_limited", "message": "429 from the provider"}

JOB_CHECKERS = ("one_job_per_intent", "duplicates_get_same_job", "owners_isolated")
MISMATCH_CHECKERS = ("one_job_per_intent", "duplicates_get_same_job",
                     "mismatch_rejected_unchanged")
CLAIM_CHECKERS = ("results_never_overwritten", "one_winner_per_job", "cancelled_never_wins",
                  "late_result_discarded_recorded", "versions_only_rise")
TIMEOUT_CHECKERS = ("timeout_unknown_blocks", "open_attempts_bounded",
                    "completed_job_refuses_attempts", "one_winner_per_job",
                    "cancelled_never_wins", "results_never_overwritten")


def _readers(draw: Draw, clients: int, job: str, latest: int) -> tuple[
        dict[str, tuple[OpSpec, ...]], list[TimerSpec]]:
    """0..clients-2 readers: each reads at time 0 and once more at a drawn time."""
    programs: dict[str, tuple[OpSpec, ...]] = {}
    timers: list[TimerSpec] = []
    for n in range(1, draw.integer(0, max(0, clients - 2)) + 1):
        name = f"reader{n}"
        programs[name] = (OpSpec("read", name, job=job),)
        kind = "attempts" if draw.boolean() else "read"
        timers.append(TimerSpec(float(draw.integer(1, latest)), name, f"{kind} by {name}",
                                (OpSpec(kind, name, job=job),)))
    return programs, timers


def double_click(draw: Draw, clients: int) -> Plan:
    programs: dict[str, tuple[OpSpec, ...]] = {}
    for n in range(1, draw.integer(2, max(2, clients)) + 1):
        tab = f"tab{n}"
        ops = [OpSpec("create", tab, key="k1", intent="ask", save="job")]
        if draw.boolean():
            ops.append(OpSpec("read", tab, job=OWN))
        programs[tab] = tuple(ops)
    if draw.boolean():  # another owner with the same key gets a job of his own
        programs["bob"] = (OpSpec("create", "bob", owner="bob", key="k1", intent="ask",
                                  save="bobs"),)
    epilogue = [OpSpec("create", "retry", key="k1", intent="ask"),
                OpSpec("read", "alice", job="job")]
    if draw.boolean():  # bob tries alice's job by its id
        epilogue.append(OpSpec("read", "bob", owner="bob", job="job"))
    return Plan("double-click", {"ask": ASK}, (), programs, (), tuple(epilogue), JOB_CHECKERS)


def mismatch(draw: Draw, clients: int) -> Plan:
    programs: dict[str, tuple[OpSpec, ...]] = {}
    for n in range(1, draw.integer(2, max(2, clients)) + 1):
        tab = f"tab{n}"
        intent = "ask" if n == 1 else "other" if n == 2 or draw.boolean() else "ask"
        ops = [OpSpec("create", tab, key="k1", intent=intent, save="job")]
        if draw.boolean():
            ops.append(OpSpec("read", tab, job=OWN))
        programs[tab] = tuple(ops)
    epilogue = (OpSpec("read", "alice", job="job"),)
    return Plan("mismatch", {"ask": ASK, "other": ASK_OTHER}, (), programs, (), epilogue,
                MISMATCH_CHECKERS)


def _reply(draw: Draw, attempt: str, result: dict[str, Any], latest: int) -> TimerSpec:
    client = f"provider:{attempt}"
    if draw.boolean() and draw.boolean():  # one reply in four is a provider error
        op = OpSpec("failed", client, attempt=attempt, error=PROVIDER_ERROR)
    else:
        op = OpSpec("succeeded", client, attempt=attempt, result=result)
    return TimerSpec(float(draw.integer(1, latest)), client, f"reply {attempt}", (op,))


def claims(draw: Draw, clients: int) -> Plan:
    setup = (
        OpSpec("create", "alice", key="c1", intent="hedged", save="job"),
        OpSpec("start", "worker:A", job="job", provider="primary", save="A"),
        OpSpec("start", "worker:B", job="job", provider="fallback", save="B"),
        OpSpec("dispatched", "worker:A", attempt="A"),
        OpSpec("dispatched", "worker:B", attempt="B"),
    )
    timers = [_reply(draw, "A", RESULT_A, 40), _reply(draw, "B", RESULT_B, 40)]
    if draw.boolean():
        victim = "B" if draw.boolean() else "A"
        timers.append(TimerSpec(float(draw.integer(1, 40)), "operator", f"cancel {victim}",
                                (OpSpec("cancelled", "operator", attempt=victim,
                                        reason="operator"),)))
    programs, reads = _readers(draw, clients, "job", 40)
    epilogue = (OpSpec("read", "alice", job="job"), OpSpec("races", "alice", job="job"),
                OpSpec("attempts", "alice", job="job"))
    return Plan("claims", {"hedged": HEDGED}, setup, programs, (*timers, *reads), epilogue,
                CLAIM_CHECKERS)


def timeouts(draw: Draw, clients: int) -> Plan:
    setup = (
        OpSpec("create", "alice", key="t1", intent="single", save="job"),
        OpSpec("start", "worker", job="job", provider="primary", save="A"),
        OpSpec("dispatched", "worker", attempt="A"),
    )
    after_timeout = [OpSpec("timed_out", "worker", attempt="A")]
    if draw.boolean():  # the worker retries on the fallback: it must be refused while A is open
        after_timeout.append(OpSpec("start", "worker", job="job", provider="fallback", save="B"))
    timers = [TimerSpec(10.0, "worker", "timeout A", tuple(after_timeout))]
    if draw.boolean():  # otherwise the provider never answers
        timers.append(_reply(draw, "A", RESULT_A, 40))
    if draw.boolean():
        ops = [OpSpec("cancelled", "operator", attempt="A", reason="operator")]
        if draw.boolean():
            ops.append(OpSpec("start", "operator", job="job", provider="fallback", save="C"))
        timers.append(TimerSpec(float(draw.integer(1, 40)), "operator", "cancel A", tuple(ops)))
    programs, reads = _readers(draw, clients, "job", 40)
    epilogue = (OpSpec("read", "alice", job="job"), OpSpec("attempts", "alice", job="job"),
                OpSpec("races", "alice", job="job"))
    return Plan("timeouts", {"single": ASK}, setup, programs, (*timers, *reads), epilogue,
                TIMEOUT_CHECKERS)


Builder = Callable[[Draw, int], Plan]

WORKLOADS: dict[str, Builder] = {
    "double-click": double_click,
    "mismatch": mismatch,
    "claims": claims,
    "timeouts": timeouts,
}
WORKLOAD_CHOICES = (*WORKLOADS, "all")


def build_plan(workload: str, draw: Draw, clients: int) -> Plan:
    """The plan for ``workload`` (``all``: the draw picks one) with ``clients`` as the bound."""
    if workload == "all":
        names = list(WORKLOADS)
        workload = names[draw.integer(0, len(names) - 1)]
    return WORKLOADS[workload](draw, clients)
