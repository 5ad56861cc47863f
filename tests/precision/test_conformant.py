"""Independently written API.md services pass every shipped scenario and the detection suite.

Each service in ``services_registry.CONFORMANT`` was written from API.md and the profile format
alone and differs from the reference wherever API.md allows (numbering, ids, digests, servers,
storage). Over real loopback sockets, each shipped scenario runs against it as an API.md target
(all its replicas), and each detection scenario through its profile at the default trial
counts: no violation, no unknown. A failure that is the harness's is an xfail naming the finding
(``cases.KNOWN`` below); one that is the service's is a bug in the service, fixed there.
"""

from __future__ import annotations

import pytest

from harness.scenarios.model import Scenario
from tests.precision.cases import cases
from tests.precision.conftest import DETECTION, SHIPPED, Fleet, Judge, evidence
from tests.precision.services_registry import CONFORMANT

KNOWN: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("service", "scenario"), cases(CONFORMANT, SHIPPED, KNOWN))
def test_shipped_scenario_holds(service: str, scenario: str, fleet: Fleet,
                                scenarios: dict[str, Scenario], judge: Judge) -> None:
    result = judge(fleet.get(service), scenarios[scenario], profile=False)
    assert result.status == "held", evidence(result)


@pytest.mark.parametrize(("service", "scenario"), cases(CONFORMANT, DETECTION, KNOWN))
def test_detection_scenario_holds(service: str, scenario: str, fleet: Fleet,
                                  scenarios: dict[str, Scenario], judge: Judge) -> None:
    result = judge(fleet.get(service), scenarios[scenario], profile=True)
    assert result.status == "held", evidence(result)
