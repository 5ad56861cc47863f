"""A run split with ``--shard K/N`` and put back together with ``failover-harness merge`` is the
run: the same results document (but for times, durations and paths), the same exit code, for
N = 1, 2, 3 and 7 — on ``check`` (the reference store and its mutants), ``scenarios run``
(trial series: rates judged again from every shard's trials) and ``explore`` (a mutant: the
violation one search finds, after the schedules one search tries). Shards that are not one
run's are refused with exit 2, naming them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness import __version__
from harness.cli import main
from tests import _cli
from tests.explore.test_through import SETTLE_MS, free_port, through

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
#: what differs between two runs of the same work: when, how long, and where
VOLATILE = {"started_at", "finished_at", "wall_s", "invocation", "run_dir", "replay_command",
            "repro_dir", "shard"}
CHECK = ["check", "--no-certify", "--quiet", "--scenarios",
         *(str(SCENARIOS / f) for f in ("double_click.yaml", "out_of_order_completion.yaml",
                                        "mismatched_key.yaml", "crash_mid_attempt.yaml"))]
#: sequential scenarios (no concurrent group: each trial is the same history wherever it runs)
#: on a mutant, so rates and first failing trials are exact
SERIES = ["scenarios", "run", "--quiet", "--target", "mutant:last-write-wins", "--trials", "3",
          *(str(SCENARIOS / f) for f in ("double_click.yaml", "out_of_order_completion.yaml",
                                         "late_result_after_completion.yaml"))]
#: a search whose first violation is schedule 6 of 14: found by a middle shard for N ≥ 3
EXPLORE = ["explore", "--quiet", "--target", "mutant:check-then-insert", "--workload", "all",
           "--budget", "14", "--seed", "4"]


CI_INDEXES = ("CI_NODE_INDEX", "CI_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB",
              "BUILDKITE_PARALLEL_JOB_COUNT")


@pytest.fixture(autouse=True)
def _no_ci_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole run is whole here even on a CI runner that says its own index."""
    for name in CI_INDEXES:
        monkeypatch.delenv(name, raising=False)


def normal(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: normal(v) for k, v in value.items() if k not in VOLATILE}
        if value.get("arrival") and isinstance(value.get("timeline"), dict):
            # a run with a concurrent group draws it as it went (each copy's measured send and
            # answer): its lanes and their marks, not their times
            out["timeline"] = [(lane["label"], lane["outcome"], [e["kind"] for e in lane["events"]])
                               for lane in value["timeline"]["lanes"]]
        return out
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def document(report_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report_dir / "latest" / "results.json").read_text("utf-8"))
    return data


def shards(tmp_path: Path, command: list[str], n: int, name: str = "shard") -> list[Path]:
    """Run ``command`` as shards 1/n … n/n (one report directory each)."""
    folders = []
    for k in range(1, n + 1):
        folder = tmp_path / f"{name}-{k}-of-{n}"
        main([*command, "--shard", f"{k}/{n}", "--report-dir", str(folder)])
        folders.append(folder)
    return folders


def merged(tmp_path: Path, folders: list[Path], name: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / name
    code = main(["merge", *map(str, folders), "--report-dir", str(out), "--quiet"])
    return code, document(out)


@pytest.mark.parametrize("command", [CHECK, SERIES, EXPLORE], ids=["check", "series", "explore"])
def test_shards_merged_are_the_run(tmp_path: Path, command: list[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no providers.yaml, no scenarios/ here
    whole_code = main([*command, "--report-dir", str(tmp_path / "whole")])
    whole = document(tmp_path / "whole")
    assert whole_code == whole["exit_code"] and "shard" not in whole
    assert whole_code in (0, 1, 3) and whole["events"]
    for n in (1, 2, 3, 7):
        folders = shards(tmp_path, command, n)
        parts = [document(f) for f in folders]
        assert [p["shard"]["index"] for p in parts] == list(range(1, n + 1))
        code, one = merged(tmp_path, folders, f"merged-{n}")
        assert code == whole_code, f"{n} shards"
        assert normal(one) == normal(whole), f"{n} shards"
        assert "shard" not in one


def test_series_rates_are_summed_over_the_shards_trials(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    folders = shards(tmp_path, SERIES, 2)
    parts = [{e["scenario"]: e for e in document(f)["events"]} for f in folders]
    # positions 3, 4, 5 of the round-robin: shard 1 runs trial 2, shard 2 trials 1 and 3
    assert [p["out_of_order_completion"]["patterns"][0]["trials"] for p in parts] == [1, 2]
    _, one = merged(tmp_path, folders, "merged")
    series = {e["scenario"]: e for e in one["events"]}["out_of_order_completion"]
    assert series["patterns"][0]["trials"] == 3
    assert all(f["rates"][0]["trials"] == 3 and f["rates"][0]["text"].startswith("3 of 3")
               for f in series["failures"])
    runs = (tmp_path / "merged" / "latest" / "runs").resolve()  # the first failing trial's
    first = Path(series["failures"][0]["first"]["run_dir"])  # run folder, copied
    assert first.parent.resolve() == runs and first.is_dir()


def test_shards_run_as_separate_processes_at_once_merge_into_the_run(tmp_path: Path) -> None:
    # a CI matrix in miniature: three processes at the same time, nothing shared but the files
    env = {**{k: v for k, v in os.environ.items() if k not in CI_INDEXES},
           "PYTHONPATH": str(ROOT)}
    whole = _cli.run([*SERIES, "--report-dir", str(tmp_path / "whole")], cwd=tmp_path,
                     env=env, timeout=300)
    jobs = [_cli.popen([*SERIES, "--report-dir", str(tmp_path / f"s{k}")], cwd=tmp_path,
                       env={**env, "CI_NODE_INDEX": str(k), "CI_NODE_TOTAL": "3"},
                       stdout=_cli.DEVNULL, stderr=_cli.DEVNULL)
            for k in (1, 2, 3)]
    assert [job.wait(timeout=300) for job in jobs] == [whole.returncode] * 3  # each: a violation
    assert [document(tmp_path / f"s{k}")["shard"]["index"] for k in (1, 2, 3)] == [1, 2, 3]
    code, one = merged(tmp_path, [tmp_path / f"s{k}" for k in (3, 1, 2)], "merged")
    assert code == whole.returncode == 1
    assert normal(one) == normal(document(tmp_path / "whole"))


# -- refusals -----------------------------------------------------------------------------------
@pytest.fixture
def three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.chdir(tmp_path)
    return shards(tmp_path, CHECK[:4] + CHECK[4:6], 3)


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *folders: Path) -> str:
    capsys.readouterr()
    code = main(["merge", *map(str, folders), "--report-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not (tmp_path / "out").exists()  # bad input writes nothing
    return err


def test_a_missing_shard_is_refused_by_name(tmp_path: Path, three: list[Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path, capsys, three[0], three[2])
    assert "shard 2/3 missing: 2 of 3 given" in err


def test_a_shard_given_twice_is_refused_naming_both(tmp_path: Path, three: list[Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path, capsys, *three, three[1])
    assert "shard 2/3 is given twice" in err and err.count(str(three[1].resolve())) >= 1


def test_shards_of_another_config_are_refused_naming_them(
        tmp_path: Path, three: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other"
    main([*CHECK[:4], CHECK[6], "--shard", "2/3", "--report-dir", str(other)])
    err = refused(tmp_path, capsys, three[0], other, three[2])
    assert f"{other}" in err and "(shard 2/3) is not a shard of the same run" in err
    assert "settings" in err and "file " in err  # another scenario file, other settings


def test_shards_of_another_total_or_command_are_refused(
        tmp_path: Path, three: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    halves = shards(tmp_path, CHECK[:4] + CHECK[4:6], 2)
    err = refused(tmp_path, capsys, three[0], halves[1])
    assert "the totals (3 and 2)" in err
    explored = shards(tmp_path, [*EXPLORE[:-4], "--budget", "3", "--seed", "4"], 3, "explore")
    err = refused(tmp_path, capsys, three[0], explored[1], three[2])
    assert "the command (check and explore)" in err


def test_a_report_run_without_shard_is_refused(tmp_path: Path, three: list[Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    whole = tmp_path / "whole"
    main([*CHECK[:6], "--report-dir", str(whole)])
    err = refused(tmp_path, capsys, whole)
    assert "it was run without --shard" in err
    err = refused(tmp_path, capsys, tmp_path / "nothing-here")
    assert "no results.json: not a report folder" in err


def test_a_shard_of_another_harness_version_is_refused(
        tmp_path: Path, three: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = three[1] / "latest" / "results.json"
    data = json.loads(path.read_text("utf-8"))
    data["harness_version"] = "9.9.9"
    data["shard"]["inputs"]["harness"] = "sha256:" + "0" * 64  # what 9.9.9 would digest
    path.write_text(json.dumps(data), "utf-8")
    err = refused(tmp_path, capsys, *three)
    assert "(shard 2/3) is not a shard of the same run" in err
    assert f"the harness version ({__version__} and 9.9.9) differ" in err


@pytest.mark.slow
def test_a_race_found_through_redis_is_found_by_the_shards_merged(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """explore --through a real service on a real redis-server, split in two: the merged report
    names the same first violating schedule (found by the second shard; the first held), the same
    checks and exit code as one run."""
    monkeypatch.chdir(tmp_path)

    service = tmp_path / "service"  # one command for every shard, as on N runners
    service.mkdir()
    port = free_port()

    def command() -> list[str]:
        (service / "jobs.db").unlink(missing_ok=True)  # each runner starts with a fresh service
        return ["explore", "--quiet", *through("redis-lock", redis_url, service, port=port),
                "--workload", "double-click", "--choices", "seeded", "--seed", "13",
                "--budget", "12", "--settle-ms", SETTLE_MS]  # each schedule controlled

    whole_code = main([*command(), "--report-dir", str(tmp_path / "whole")])
    whole = document(tmp_path / "whole")
    assert whole_code == 1, whole  # the check-then-lock race is there to be found
    folders = []
    for k in (1, 2):
        folder = tmp_path / f"redis-{k}-of-2"
        main([*command(), "--shard", f"{k}/2", "--report-dir", str(folder)])
        folders.append(folder)
    code, one = merged(tmp_path, folders, "merged-redis")
    assert code == whole_code
    first = [e for e in whole["events"] if e["type"] == "explore_result"]
    again = [e for e in one["events"] if e["type"] == "explore_result"]
    assert len(first) == len(again) == 1
    assert first[0]["found_at"] >= 6, first[0]  # in the second shard's half: the first is clean
    assert document(folders[0])["exit_code"] == 0 and document(folders[1])["exit_code"] == 1
    for field in ("verdict", "found_at", "schedules_tried", "checks", "schedule"):
        assert again[0].get(field) == first[0].get(field), field
