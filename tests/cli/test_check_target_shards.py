"""``check --target --shard K/N`` on an example service, merged: every scenario judged once,
the detection suite's trials dealt over the shards and counted together — the verdicts, exit
code and trial counts of one unsharded check. (Against a live service a concurrent group is a
race by design: which duplicate wins, and the losers' answers, differ from run to run, so the
histograms are not compared; a correct service holds every promise in every trial.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.detection.conftest import PROFILE, ProcessService


@pytest.fixture
def correct(tmp_path: Path) -> Iterator[ProcessService]:
    service = ProcessService("correct", tmp_path / "correct.db", [], tmp_path / "correct.log")
    yield service
    service.stop()


def judged(report_dir: Path) -> tuple[int, list[tuple[Any, ...]]]:
    """The exit code, and each scenario's verdict with its trials per pattern."""
    data = json.loads((report_dir / "latest" / "results.json").read_text("utf-8"))
    return data["exit_code"], [
        (e["type"], e["scenario"], e["verdict"],
         tuple((p["pattern"], p["trials"], p["violated"]) for p in e.get("patterns", ())))
        for e in data["events"] if e["type"] in ("scenario_run", "trial_series")]


def test_check_target_shards_merge_into_the_check(correct: ProcessService, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("CI_NODE_INDEX", "CI_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB",
                 "BUILDKITE_PARALLEL_JOB_COUNT"):
        monkeypatch.delenv(name, raising=False)
    command = ["check", "--target", correct.url, "--target-profile", str(PROFILE),
               "--trials", "2", "--quiet"]
    code = main([*command, "--report-dir", str(tmp_path / "whole")])
    whole = judged(tmp_path / "whole")
    assert code == whole[0] == 0
    assert any(kind == "trial_series" for kind, *_ in whole[1])
    folders = [tmp_path / f"shard-{k}" for k in (1, 2, 3)]
    for k, folder in enumerate(folders, start=1):
        main([*command, "--shard", f"{k}/3", "--report-dir", str(folder)])
    parts = [judged(f)[1] for f in folders]
    assert sum(len(p) for p in parts) > len(whole[1])  # a series' trials over several shards
    code = main(["merge", *map(str, folders), "--report-dir", str(tmp_path / "merged")])
    assert (code, judged(tmp_path / "merged")[1]) == whole
