"""A service that refuses every request passes no scenario.

401 (a wrong token in CI), 403, 404 (a wrong base path) and 500 (a broken deployment), answered
to every request on every path: no shipped scenario and no detection scenario may say PASS —
nothing was shown to hold. Violated or unknown are both right; passed is a vacuous verdict.
(One trial per arrival pattern: every trial of a refuser is the same refusal.)
"""

from __future__ import annotations

import pytest

from harness.domain.errors import ConfigError
from harness.scenarios.model import Scenario
from tests.precision.cases import cases
from tests.precision.conftest import DETECTION, SHIPPED, Fleet, Judge, evidence
from tests.precision.services_registry import REFUSER_STATUSES, REFUSERS

VACUOUS = ("harness: vacuous pass — the run stops after the first refused step and every "
           "checker is valid on the empty history")
# scenario → the statuses whose refusers it passes today
PASSING_TODAY: dict[str, tuple[int, ...]] = {}
KNOWN = {(f"refuses-{status}", scenario): VACUOUS
         for scenario, statuses in PASSING_TODAY.items() for status in statuses}


@pytest.mark.parametrize(("service", "scenario"),
                         cases(REFUSERS, [*SHIPPED, *DETECTION], KNOWN))
def test_refuser_passes_no_scenario(service: str, scenario: str, fleet: Fleet,
                                    scenarios: dict[str, Scenario], judge: Judge) -> None:
    detection = scenario in {p.stem for p in DETECTION}
    # A refusal is the same in every trial: one trial per arrival pattern shows it.
    try:
        result = judge(fleet.get(service), scenarios[scenario], profile=detection, trials=1)
    except ConfigError as exc:
        # 404 on every path, /healthz included: the preflight stops before any scenario and
        # asks whether the base URL is right (issue 24) — no verdict at all, so no pass
        assert service == "refuses-404" and "is the base URL right?" in str(exc), exc
        return
    assert result.status in ("broken", "unknown"), evidence(result)


def test_every_refuser_status_is_covered() -> None:
    assert sorted(REFUSER_STATUSES) == [401, 403, 404, 500]
