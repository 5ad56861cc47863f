"""A schedule that cannot go on is not a broken promise (qa Q33): explore exits 3 (unknown),
never 1, and says what to try. Seen on a correct service under load: the through-controller
stalled and the run ended with the violation's exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.explore import entry as explore_command
from harness.explore.controller import ExploreStuck


def test_a_stuck_schedule_exits_3_not_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def stuck(*args: object, **kwargs: object) -> None:
        raise ExploreStuck("the schedule is stuck at virtual time 0 s: alice/1=idle — no "
                           "request can move")

    monkeypatch.setattr(explore_command, "search", stuck)  # the name the entry point calls
    code = main(["explore", "--target", "mutant:owner-leak", "--workload", "double-click",
                 "--budget", "5", "--report-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "error: the schedule is stuck" in err and "Traceback" not in err
