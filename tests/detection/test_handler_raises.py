"""A handler that raises: the server answers 500 and closes the kept-alive connection (uvicorn
behind Starlette's error middleware). A conformant middleware passes ``handler_failure`` — the
retry the client wrote to the closing connection is sent again on a new one and recorded so —
and a middleware that leaves the key locked after the crash is still caught."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from harness.scenarios.model import Scenario
from harness.scenarios.targets.base import Target
from harness.scenarios.targets.service import ProfileTarget
from harness.scenarios.trials import run_trials
from tests.detection.conftest import PROFILE, Start

# the error reporter's work before the close: the retry meets it if written within that, which
# 100 ms did not leave a loaded machine (2 of 3 trials, once); 400 as tests/scenarios/test_transport
REPORT_MS = "400"


def _resent(ts: object) -> list[str]:
    return [op.value["resent"] for run in ts.all_runs  # type: ignore[attr-defined]
            for op in run.history if "resent" in op.value]


def test_a_conformant_service_whose_handler_raises_passes_handler_failure(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    url = start_service("correct", "--report-ms", REPORT_MS).url
    ts = run_trials(detection["handler_failure"], profiled(url, default_fault="raise"), trials=3)
    assert ts.status == "held", (ts.unknowns(), [c.to_json() for r in ts.all_runs
                                                   for c in r.checks if c.verdict != "held"])
    resent = _resent(ts)
    assert len(resent) == 3, resent  # each trial's first retry met the closing connection
    assert all("on a reused keep-alive connection before any answer" in r for r in resent)
    assert not [op for r in ts.all_runs for op in r.history if op.type == "info"]


def test_without_resending_the_retry_would_be_recorded_as_no_answer(
        start_service: Start, detection: dict[str, Scenario]) -> None:
    url = start_service("correct", "--report-ms", REPORT_MS).url
    with ProfileTarget(url, PROFILE, env={}, transport=httpx.HTTPTransport()) as plain:
        plain.profile = plain.profile.model_copy(update={"default_fault": "raise"})
        ts = run_trials(detection["handler_failure"], plain, trials=1)
    lost = [op.value for op in ts.all_runs[0].history if op.type == "info"]
    assert [{k: v for k, v in op.items() if k != "detail"} for op in lost] == [
        {"error": "no_answer", "status": 0}]
    # what the client saw, where, and that the request may have been applied
    assert lost[0]["detail"].startswith(f"no response from {url}: RemoteProtocolError: ")
    assert lost[0]["detail"].endswith("(the outcome is unknown)")


def test_a_key_left_locked_after_the_handler_raised_is_still_caught(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    url = start_service("gap", "--flaws", "none", "--report-ms", REPORT_MS).url
    ts = run_trials(detection["handler_failure"],
                    profiled(url, default_fault="raise", lease_s=0.2), trials=1)
    assert ts.status == "broken"
    assert "retry_after_failure_served" in {f.partition(":")[0] for f in ts.failures()}

