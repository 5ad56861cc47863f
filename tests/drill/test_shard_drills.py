"""`drill --shard K/N` on an example service, then `merge`: the drills × trials dealt over N
shards and judged together give the verdicts, rates and counts of one unsharded drill, for
N = 1, 2, 3 and 7 — on the correct service (every promise held) and on a twin that breaks its
rule in every trial (the broken count summed over the shards)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.drill.conftest import provider_env
from tests.drill.test_examples_drills import SETTLE_S, free_port, profile_copy

# a service start and a few small drills per shard; like the example drills, alone on a worker
pytestmark = [pytest.mark.slow, pytest.mark.one_worker("drill-examples")]


def rates(report_dir: Path, promises: set[str] | None = None) -> tuple[int, dict[str, Any]]:
    """The run's exit code, and per drill its verdict, intents and promise counts (of
    ``promises``: all)."""
    data = json.loads((report_dir / "latest" / "results.json").read_text("utf-8"))
    drills = {e["drill"]: (e["verdict"], e["trials"],
                           {p["promise"]: (p["held"], p["broken"], p["unknown"],
                                           p["not_judged"], p["text"]) for p in e["promises"]
                            if promises is None or p["promise"] in promises})
              for e in data["events"] if e["type"] == "drill_run"}
    return data["exit_code"], drills


def drilled(start_service: Callable[..., Any], tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch, profile: str, args: tuple[str, ...],
            drills: str, trials: int, shards: tuple[int, ...],
            promises: set[str] | None = None) -> None:
    """Drill one running service whole, then as ``n`` shards merged for each ``n``: equal
    (the counts of ``promises``: all)."""
    primary, fallback = free_port(), free_port()
    service = start_service("correct_service.py", ["--timeout", "0.5", *args],
                            provider_env(primary, fallback))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIMARY_PORT", str(primary))
    monkeypatch.setenv("FALLBACK_PORT", str(fallback))
    for name in ("CI_NODE_INDEX", "CI_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB",
                 "BUILDKITE_PARALLEL_JOB_COUNT"):
        monkeypatch.delenv(name, raising=False)
    command = ["drill", "--target", service.url, "--target-profile",
               str(profile_copy(tmp_path, profile, SETTLE_S)), "--drills", drills,
               "--trials", str(trials), "--quiet"]
    code = main([*command, "--report-dir", str(tmp_path / "whole")])
    whole = rates(tmp_path / "whole", promises)
    assert code == whole[0] and whole[1]
    for n in shards:
        folders = [tmp_path / f"{n}-{k}" for k in range(1, n + 1)]
        for k, folder in enumerate(folders, start=1):
            main([*command, "--shard", f"{k}/{n}", "--report-dir", str(folder)])
        parts = [rates(f)[1] for f in folders]
        assert sum(t for part in parts for (_, t, _) in part.values()) == trials * len(
            drills.split(","))  # each intent drilled once, by one shard
        out = tmp_path / f"merged-{n}"
        code = main(["merge", *map(str, folders), "--report-dir", str(out), "--quiet"])
        assert (code, rates(out, promises)[1]) == whole, f"{n} shards"


def test_shards_of_a_drill_merge_into_the_drill(start_service: Callable[..., Any],
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the primary is let go 5 s after its call (see test_examples_drills)
    drilled(start_service, tmp_path, monkeypatch, "correct", ("--abandon-after", "5"),
            "5xx,double-click", 2, (1, 2, 3, 7))


def test_a_broken_rule_is_counted_over_every_shards_intents(
        start_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # both submits of a double click from one barrier: two jobs, in every trial (its other
    # rules may break in some trials or not, run to run: test_examples_drills' may_break)
    drilled(start_service, tmp_path, monkeypatch, "check-then-insert",
            ("--defect", "check-then-insert"), "double-click", 3, (3,),
            {"one_job_per_intent"})
    code, merged = rates(tmp_path / "merged-3")
    held, broken = merged["double-click"][2]["one_job_per_intent"][:2]
    assert code == 1 and (held, broken) == (0, 3)
