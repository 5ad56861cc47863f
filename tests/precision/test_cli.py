"""What a user sees: ``failover-harness scenarios run`` over every shipped scenario against each
conformant service (all its replicas) exits 0 — every promise held, nothing unknown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import _cli
from tests.precision.conftest import ROOT, Fleet
from tests.precision.services_registry import CONFORMANT


@pytest.mark.parametrize("service", [
    pytest.param(name, id=name, marks=[pytest.mark.postgres] if spec.postgres else [])
    for name, spec in CONFORMANT.items()])
def test_scenarios_run_exits_0(service: str, fleet: Fleet, tokens_file: Path,
                               tmp_path: Path) -> None:
    running = fleet.get(service)
    done = _cli.run(
        ["scenarios", "run", str(ROOT / "scenarios"),
         "--target", ",".join(running.urls), "--tokens-file", str(tokens_file),
         "--report-dir", str(tmp_path)], timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = re.search(r"(\d+) scenarios: (\d+) passed", done.stdout)
    assert summary and summary[1] == summary[2], done.stdout[-2000:]
