"""Real idempotency middlewares from PyPI, judged through profiles written from their own docs.

Each service is a FastAPI order handler behind one middleware (see
``services/middleware_service.py``), once with a fault that makes the handler *raise* (the
server answers 500 and closes the connection) and once with one that *returns* a JSON 500.
Every shipped scenario and every detection scenario runs through the profile at its default
trial counts, and the verdict must be the right one for that middleware:

- ``fastapi-idempotency-key`` and ``fastapi-idempotency`` keep every promise their READMEs make:
  everything they can be asked passes; scenarios needing attempts are not applicable.
- ``asgi-idempotency-header`` has two real bugs: a handler that raises leaves its key "pending"
  forever (every retry is 409), and a key reused with another body silently replays the first
  order. Those scenarios must be violated; its JSON 500 is cached and replayed, as its README
  says, so with ``on_handler_error: final`` that one holds.

"Passed" tolerates an unknown whose only cause is a field the profile cannot map (these
services have no job version): that is what the harness documents for such targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.scenarios import TrialSet
from harness.scenarios.model import Scenario
from tests.precision.cases import cases
from tests.precision.conftest import DETECTION, SHIPPED, Fleet, Judge, evidence
from tests.precision.services_registry import MIDDLEWARES


@dataclass(frozen=True)
class Expect:
    status: str
    #: an unknown is accepted instead of ``status`` when every unknown reason mentions this
    unknown_about: str | None = None


PASSED = Expect("passed", unknown_about="'version'")
NOT_APPLICABLE = Expect("not_applicable")
JOBS_ONLY = {"double_click", "mismatched_key", "reordered_json_same_intent",
             "triple_click_across_replicas", "duplicate_arrivals", "handler_failure",
             "replay_fidelity"}
BUGGY = "idempotency-header"  # asgi-idempotency-header


def expected(service: str, scenario: str) -> Expect:
    """The right verdict for ``scenario`` on ``service`` (see the module docstring)."""
    if scenario not in JOBS_ONLY:
        return NOT_APPLICABLE  # needs attempts, timeouts, hedge or owners: a jobs-only profile
    if scenario == "triple_click_across_replicas":
        return NOT_APPLICABLE  # one URL: no replicas to spread the clicks over
    if service.startswith(BUGGY):
        if scenario == "mismatched_key":
            return Expect("violated")  # another body under a used key replays the first order
        if scenario == "handler_failure" and service.endswith("-raise"):
            return Expect("violated")  # the key stays pending after the handler raised
        if scenario == "duplicate_arrivals":
            return Expect("passed", unknown_about="lease_s")  # its README states no lease
    return PASSED


TRANSPORT = ("harness: a request written to the keep-alive connection the server closes after "
             "its 500 is recorded as 'no answer' instead of being re-sent on a new connection")
BYTES = "harness: reordered_json_same_intent ignores the profile's fingerprint: bytes"
REPLICAS = "harness: a single-URL profile target claims replicas (the scenario passes vacuously)"
KNOWN: dict[tuple[str, str], str] = {
    ("idempotency-key-raise", "handler_failure"): TRANSPORT,
    ("fastapi-idempotency-raise", "handler_failure"): TRANSPORT,
    **{(f"{m}-{f}", "reordered_json_same_intent"): BYTES
       for m in ("idempotency-key", "fastapi-idempotency") for f in ("raise", "500")},
    **{(service, "triple_click_across_replicas"): REPLICAS for service in MIDDLEWARES},
}


def verdict_matches(result: TrialSet, want: Expect) -> bool:
    if result.status == want.status:
        return True
    if result.status != "unknown" or want.unknown_about is None:
        return False
    checks = [c for run in result.all_runs for c in run.checks if c.verdict != "valid"]
    return all(c.verdict == "unknown" and all(want.unknown_about in u for u in c.unknowns)
               for c in checks)


def same_as_raise(service: str, scenario: str) -> bool:
    """The two fault variants of a middleware differ only in the fault: its duplicate arrivals
    (60 runs) are measured once, on the ``-raise`` variant."""
    return service.endswith("-500") and scenario == "duplicate_arrivals"


@pytest.mark.parametrize(("service", "scenario"),
                         cases(MIDDLEWARES, [*SHIPPED, *DETECTION], KNOWN, skip=same_as_raise))
def test_middleware_gets_the_right_verdict(service: str, scenario: str, fleet: Fleet,
                                           scenarios: dict[str, Scenario],
                                           judge: Judge) -> None:
    want = expected(service, scenario)
    result = judge(fleet.get(service), scenarios[scenario], profile=True)
    right = verdict_matches(result, want)
    assert right, f"expected {want}\n{evidence(result)}"


@pytest.mark.xfail(strict=True, reason="harness: promise and violation texts name API.md's 409 "
                   "where the profile declares the middleware's 422")
def test_reports_name_the_status_the_profile_declares(fleet: Fleet,
                                                      scenarios: dict[str, Scenario],
                                                      judge: Judge) -> None:
    """asgi-idempotency-header replays the first order for another body; its profile declares
    key reuse as 422, so the report must not tell the user to expect a 409."""
    result = judge(fleet.get("idempotency-header-500"), scenarios["mismatched_key"],
                   profile=True)
    texts = [c.promise for run in result.all_runs for c in run.checks] + [
        v.message for run in result.all_runs for c in run.checks for v in c.violations]
    assert result.status == "violated", evidence(result)
    assert not [t for t in texts if "409" in t], texts
