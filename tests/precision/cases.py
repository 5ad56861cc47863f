"""Parametrisation: one test case per service × scenario, each with its own marks.

``KNOWN`` holds the cases that fail today because of the harness, not the service: each is an
``xfail(strict=True)`` whose reason names the finding (written up, with its evidence, in the
team's notes). When a harness fix lands, its case passes, the strict xfail fails, and the mark
is removed here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests.precision.conftest import Spec

SLOW_SCENARIOS = {"duplicate_arrivals"}  # 3 patterns × 20 trials at the default counts


def cases(specs: dict[str, Spec], scenario_files: Iterable[Path],
          known: dict[tuple[str, str], str],
          skip: Callable[[str, str], bool] = lambda service, scenario: False) -> list[object]:
    params: list[object] = []
    for service, spec in specs.items():
        for path in scenario_files:
            if skip(service, path.stem):
                continue
            marks: list[pytest.MarkDecorator] = []
            if spec.postgres:
                marks.append(pytest.mark.postgres)
            if path.stem in SLOW_SCENARIOS:
                marks.append(pytest.mark.slow)
            reason = known.get((service, path.stem))
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(service, path.stem, marks=marks,
                                       id=f"{service}-{path.stem}"))
    return params
