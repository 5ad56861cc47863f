"""What explore sends a service through its own HTTP API (``--target http://… --through …``).

==================  ===========================================================================
``double-click``    2..N identical creates with one key (a user's double click, a client's
                    retry racing the original), some reading their job after; a retry and a
                    read once the race is over
``mismatch``        2..N creates with one key, at least one with another body
``handler-failure`` the handler is made to fail once (the profile's fault), then 2..N creates
                    with one key race it; a retry after the race
==================  ===========================================================================

Copies are named ``alice/1``, ``alice/2``…, as the scenario engine names the copies of a
concurrent group, so the same checkers classify every copy's answer. The controller sends the
clients' first requests one at a time, each held at the proxy at its first storage step before
the next is sent; so *when* a copy arrives is decided by which steps the controller grants
before it lets that copy's first step through — a staggered arrival is just another
interleaving. Keys are fresh per schedule (``<schedule tag>-k1``), so no restart is needed.
Checkers that need an observer the profile does not declare (a side-effect counter, a fault,
an in-flight answer) are left out rather than reported unknown on every schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from harness.explore.plan import OWN, Draw, OpSpec, Plan
from harness.explore.workloads import ASK, ASK_OTHER

Builder = Callable[[Draw, int], Plan]


def _copies(draw: Draw, clients: int, intent_of: Callable[[int], str]) -> dict[
        str, tuple[OpSpec, ...]]:
    programs: dict[str, tuple[OpSpec, ...]] = {}
    for n in range(1, draw.integer(2, max(2, clients)) + 1):
        name = f"alice/{n}"
        ops = [OpSpec("create", name, key="k1", intent=intent_of(n), save="job")]
        if draw.boolean():
            ops.append(OpSpec("read", name, job=OWN))
        programs[name] = tuple(ops)
    return programs


def double_click(draw: Draw, clients: int) -> Plan:
    programs = _copies(draw, clients, lambda n: "ask")
    epilogue = (OpSpec("create", "retry", key="k1", intent="ask"),
                OpSpec("read", "alice", job="job"))
    return Plan("double-click", {"ask": ASK}, (), programs, (), epilogue,
                ("one_job_per_intent", "duplicates_get_same_job", "loser_answers_allowed",
                 "one_side_effect_per_click", "in_progress_within_lease"))


def mismatch(draw: Draw, clients: int) -> Plan:
    programs = _copies(draw, clients, lambda n: "ask" if n == 1 else "other" if n == 2
                       or draw.boolean() else "ask")
    return Plan("mismatch", {"ask": ASK, "other": ASK_OTHER}, (), programs, (),
                (OpSpec("read", "alice", job="job"),),
                ("one_job_per_intent", "mismatch_rejected_unchanged",
                 "one_side_effect_per_click", "in_progress_within_lease"))


def handler_failure(draw: Draw, clients: int) -> Plan:
    programs = _copies(draw, clients, lambda n: "ask")
    return Plan("handler-failure", {"ask": ASK}, (OpSpec("fault", "nemesis"),), programs, (),
                (OpSpec("create", "retry", key="k1", intent="ask"),),
                ("retry_after_failure_served", "in_progress_within_lease",
                 "one_side_effect_per_click"))


HTTP_WORKLOADS: dict[str, Builder] = {
    "double-click": double_click,
    "mismatch": mismatch,
    "handler-failure": handler_failure,
}
NEEDS = {"one_side_effect_per_click": "side_effects", "retry_after_failure_served":
         "handler_faults", "in_progress_within_lease": "in_flight"}


def http_builder(capabilities: Collection[str]) -> Callable[[str, Draw, int], Plan]:
    """A plan builder for a service with ``capabilities`` (``in_flight`` when its profile
    declares an in-progress answer): ``all`` draws among the workloads it can run."""
    usable = [name for name in HTTP_WORKLOADS
              if name != "handler-failure" or "handler_faults" in capabilities]

    def build(name: str, draw: Draw, clients: int) -> Plan:
        if name == "all":
            name = usable[draw.integer(0, len(usable) - 1)]
        plan = HTTP_WORKLOADS[name](draw, clients)
        kept = tuple(c for c in plan.checkers if NEEDS.get(c, "") in ("", *capabilities))
        return Plan(plan.workload, plan.intents, plan.setup, plan.clients, plan.timers,
                    plan.epilogue, kept)

    return build


__all__ = ["HTTP_WORKLOADS", "http_builder"]
