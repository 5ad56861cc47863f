"""``certify --shard K/N`` over a chain of 4 pairings, run as N separate processes and merged:
the merged lock is the lock of one unsharded run (timestamps and durations aside), each pairing
certified whole by exactly one shard; shards that are missing, duplicated, of another run, of
another harness, or that conflict are refused by name."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.contracts.certifier import plan, shard_plan
from harness.contracts.lock_merge import SHARD_LOCK, merge_locks
from harness.domain.errors import ConfigError
from harness.domain.shard import Shard
from tests import _cli
from tests.contracts.conftest import Project, provider

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("certify-shards")

ROOT = Path(__file__).resolve().parents[2]
PAIRINGS = {("primary", "ticket_triage"), ("second", "ticket_triage"),
            ("halluc", "ticket_triage"), ("ignores", "ticket_triage")}
RUN_TIMEOUT_S = 600  # bounds a hang only


def four_pairings(root: Path, last: str = "auto") -> Project:
    """A chain of 4: a conformant primary, a conformant fallback of the other wire format, one
    with hallucinated keys (manual) and one that ignores the system prompt (judged against the
    primary's answers: its shard needs the primary as its reference), linked ``last``."""
    project = Project(root)
    project.write_providers(
        {"primary": provider("conformant"),
         "second": provider("conformant", kind="anthropic-messages"),
         "halluc": provider("hallucinated-key"),
         "ignores": provider("ignores-system-prompt")},
        chain=[("primary", "auto"), ("second", "auto"), ("halluc", "manual"),
               ("ignores", last)])
    return project


def run_shards(project: Project, total: int, out: Path,
               only: tuple[int, ...] = ()) -> list[Path]:
    """``certify --shard K/N`` for K = 1..N (or those in ``only``) as processes at once; the
    shard lock each wrote in its report folder."""
    ks = only or tuple(range(1, total + 1))
    folders = [out / f"shard-{k}" for k in ks]
    procs = [
        _cli.popen(
            ["certify", "--providers", str(project.providers_path), "--shard", f"{k}/{total}",
             "--report-dir", str(folder), "--no-progress", "--quiet"],
            cwd=project.root, stdout=_cli.PIPE, stderr=_cli.STDOUT,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})
        for k, folder in zip(ks, folders, strict=True)
    ]
    for proc in procs:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        assert proc.returncode in (0, 1), output  # 1: 'ignores' is an ineligible auto link
        assert "Traceback" not in output, output
    return [folder / "latest" / SHARD_LOCK for folder in folders]


def normalized_data(value: Any, drop: tuple[str, ...] = ()) -> Any:
    """``value`` without what differs between two runs of the same work: the times
    (certified_at, expires_at), durations (``*_s``) and ``drop`` (texts naming paths)."""
    if isinstance(value, dict):
        return {k: normalized_data(v, drop) for k, v in value.items()
                if k not in ("certified_at", "expires_at", *drop) and not k.endswith("_s")
                and not k.startswith("latency")}
    if isinstance(value, list):
        return [normalized_data(v, drop) for v in value]
    return value


def normalized(lock: Path) -> dict[str, Any]:
    return normalized_data(json.loads(lock.read_text("utf-8")))


def report(report_dir: Path) -> dict[str, Any]:
    """A report's verdict, exit code and events, without times, durations and paths."""
    document = json.loads((report_dir / "latest" / "results.json").read_text("utf-8"))
    return {"verdict": document["verdict"], "exit_code": document["exit_code"],
            "events": [normalized_data(e, drop=("fix",)) for e in document["events"]]}


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Project, dict[str, Any], dict[str, Any]]:
    """The project the shards run in (no lock yet, as the unsharded run had none), and the lock
    and report one unsharded ``certify`` writes for the same project (a copy, so that the
    shards see no lock: a lock read before certifying gives every record its drift)."""
    project = four_pairings(tmp_path_factory.mktemp("certify-shards"))
    whole = four_pairings(tmp_path_factory.mktemp("certify-whole"))
    code = main(["certify", "--providers", str(whole.providers_path), "--report-dir",
                 str(whole.root / "reports"), "--no-progress", "--quiet"])
    assert code == 1  # 'ignores' is an ineligible auto link
    lock = normalized(whole.lock_path)
    assert {(c["provider"], c["contract"]) for c in lock["certifications"]} == PAIRINGS
    return project, lock, report(whole.root / "reports")


@pytest.fixture(scope="module")
def shard_runs(unsharded, tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], list[Path]]:
    """``shard_runs(N)``: the shard locks of N shards of the project (run once per N)."""
    project = unsharded[0]
    runs: dict[int, list[Path]] = {}

    def get(total: int) -> list[Path]:
        if total not in runs:
            runs[total] = run_shards(project, total, tmp_path_factory.mktemp(f"n{total}"))
        return runs[total]

    return get


@pytest.mark.parametrize("total", [1, 2, 3])
def test_n_shards_merged_give_the_unsharded_lock_and_report(unsharded, shard_runs,
                                                            tmp_path: Path, total: int) -> None:
    project, expected_lock, expected_report = unsharded
    locks = shard_runs(total)
    assert not project.lock_path.exists()  # a shard leaves the lock file alone
    certified = [set(map(tuple, json.loads(p.read_text("utf-8"))["shard"]["pairings"]))
                 for p in locks]
    assert set().union(*certified) == PAIRINGS  # every pairing certified…
    assert sum(len(c) for c in certified) == len(PAIRINGS)  # …by exactly one shard
    merged = tmp_path / "providers.lock.json"
    folders = [str(p.parent) for p in reversed(locks)]  # any order of the folders
    code = main(["merge", *folders, "--lock", str(merged), "--report-dir",
                 str(tmp_path / "merged"), "--quiet"])
    assert code == 1  # as the unsharded run: 'ignores' is an ineligible auto link
    assert normalized(merged) == expected_lock
    assert "shard" not in json.loads(merged.read_text("utf-8"))  # a lock to commit
    assert report(tmp_path / "merged") == expected_report


def test_merge_locks_takes_every_pairing_in_any_order(shard_runs, tmp_path: Path) -> None:
    result = merge_locks(list(reversed(shard_runs(2))), into=tmp_path / "providers.lock.json")
    assert sorted(result.taken) == sorted(PAIRINGS) and not result.kept
    assert [p.parent.parent.name for p in result.shards] == ["shard-1", "shard-2"]


def test_the_split_is_canonical_whole_and_carries_each_fallbacks_reference(tmp_path) -> None:
    project = four_pairings(tmp_path)
    ws = project.workspace()
    pairings = plan(ws.providers, ws.contracts)
    for total in range(1, 8):
        owned: list[tuple[str, str]] = []
        for k in range(1, total + 1):
            part = shard_plan(pairings, Shard(k, total))
            mine = [(p.provider.id, p.contract.id) for p in part if p.record]
            owned += mine
            references = {p.provider.id for p in part if not p.record}
            # a fallback judged here has its chain primary here: certified, or as reference
            assert not mine or "primary" in {p.provider.id for p in part}
            assert references <= {"primary"}
        assert sorted(owned) == sorted(PAIRINGS)  # each pairing in exactly one shard
    # canonical: by (contract, provider, model) — halluc, ignores, primary, second — round
    # robin, whatever order the plan lists them in; the part keeps the plan's order
    for order in (pairings, list(reversed(pairings))):
        part = shard_plan(order, Shard(1, 3))
        assert {(p.provider.id, p.record) for p in part} \
            == {("halluc", True), ("second", True), ("primary", False)}
        assert [p.provider.id for p in part] == [p.provider.id for p in order
                                                 if p.provider.id in ("halluc", "second",
                                                                      "primary")]


@pytest.fixture
def three_shards(shard_runs) -> list[Path]:
    return shard_runs(3)


def test_a_missing_shard_is_refused_by_name(three_shards, tmp_path: Path) -> None:
    into = tmp_path / "providers.lock.json"
    with pytest.raises(ConfigError) as caught:
        merge_locks(three_shards[:2], into=into)
    assert "shard 3/3 is missing" in str(caught.value)
    assert str(three_shards[0]) in str(caught.value)
    assert not into.exists()


def test_a_duplicated_shard_is_refused_naming_both_files(three_shards, tmp_path: Path) -> None:
    copy = tmp_path / "copy" / SHARD_LOCK
    copy.parent.mkdir()
    shutil.copy(three_shards[1], copy)
    with pytest.raises(ConfigError) as caught:
        merge_locks([*three_shards, copy], into=tmp_path / "providers.lock.json")
    message = str(caught.value)
    assert "shard 2/3 is given twice" in message
    assert str(three_shards[1]) in message and str(copy) in message


def test_shards_of_another_contract_are_refused_naming_both(unsharded, three_shards,
                                                            tmp_path: Path) -> None:
    project = unsharded[0]
    other = Project(tmp_path / "other", fresh=False)
    shutil.copytree(project.contracts, other.contracts)
    shutil.copy(project.providers_path, other.providers_path)
    contract = other.contract / "contract.yaml"  # another version of the contract
    contract.write_text(contract.read_text("utf-8").replace('version: "1.0.0"',
                                                            'version: "1.0.1"', 1), "utf-8")
    [other_third] = run_shards(other, 3, tmp_path / "runs", only=(3,))
    with pytest.raises(ConfigError) as caught:
        merge_locks([three_shards[0], three_shards[1], other_third],
                    into=tmp_path / "providers.lock.json")
    message = str(caught.value)
    assert "not shards of one run" in message and "the contracts" in message
    assert str(three_shards[0]) in message and str(other_third) in message


def _edited(path: Path, out: Path, edit: Any) -> Path:
    data = json.loads(path.read_text("utf-8"))
    edit(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data), "utf-8")
    return out


def test_another_harness_version_is_refused_by_name(three_shards, tmp_path: Path) -> None:
    def older(data: dict[str, Any]) -> None:
        data["generated_by"] = "failover-harness 0.0.1"
        data["shard"]["inputs"]["harness"] = "sha256:00"

    old = _edited(three_shards[2], tmp_path / "old" / SHARD_LOCK, older)
    with pytest.raises(ConfigError) as caught:
        merge_locks([*three_shards[:2], old], into=tmp_path / "providers.lock.json")
    assert str(old) in str(caught.value) and "failover-harness 0.0.1" in str(caught.value)


def test_conflicting_records_of_one_pairing_are_refused_naming_both(three_shards,
                                                                   tmp_path: Path) -> None:
    first = json.loads(three_shards[0].read_text("utf-8"))
    stolen = dict(first["certifications"][0], verdict="eligible")  # same hashes, other verdict

    def holds_it_too(data: dict[str, Any]) -> None:
        data["certifications"].append(stolen)

    twin = _edited(three_shards[1], tmp_path / "twin" / SHARD_LOCK, holds_it_too)
    with pytest.raises(ConfigError) as caught:
        merge_locks([three_shards[0], twin, three_shards[2]],
                    into=tmp_path / "providers.lock.json")
    message = str(caught.value)
    assert "conflicting records" in message and stolen["provider"] in message
    assert str(three_shards[0]) in message and str(twin) in message


def test_the_newest_certification_of_a_pairing_wins(three_shards, tmp_path: Path) -> None:
    into = tmp_path / "providers.lock.json"
    merge_locks(three_shards, into=into)
    newer = json.loads(into.read_text("utf-8"))
    kept = newer["certifications"][0]
    kept["certified_at"] = "2999-01-01T00:00:00Z"  # certified after the shards ran
    into.write_text(json.dumps(newer), "utf-8")
    result = merge_locks(three_shards, into=into)
    assert result.kept == [(kept["provider"], kept["contract"])]
    written = {c["provider"]: c for c in json.loads(into.read_text("utf-8"))["certifications"]}
    assert written[kept["provider"]]["certified_at"].startswith("2999-01-01T00:00:00")
    assert len(result.taken) == len(PAIRINGS) - 1


def test_a_committed_lock_is_not_a_shard(three_shards, tmp_path: Path) -> None:
    committed = tmp_path / "providers.lock.json"
    merge_locks(three_shards, into=committed)
    with pytest.raises(ConfigError) as caught:
        merge_locks([committed], into=tmp_path / "other.lock.json")
    assert "not a shard's lock" in str(caught.value)
    assert str(committed) in str(caught.value)


def _merge_cli(folders: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
               ) -> tuple[int, str]:
    into = tmp_path / "providers.lock.json"
    code = main(["merge", *map(str, folders), "--lock", str(into), "--report-dir",
                 str(tmp_path / "merged"), "--quiet"])
    assert not into.exists() and not (tmp_path / "merged").exists()  # refused: nothing written
    return code, capsys.readouterr().err


def test_merge_refuses_a_missing_or_duplicated_shard_with_exit_2(three_shards, tmp_path: Path,
                                                                 capsys) -> None:
    folders = [p.parent for p in three_shards]
    code, err = _merge_cli(folders[:2], tmp_path, capsys)
    assert code == 2 and "shard 3/3 missing" in err, err
    copy = tmp_path / "copy"
    shutil.copytree(folders[1], copy)
    code, err = _merge_cli([*folders, copy], tmp_path, capsys)
    assert code == 2 and "shard 2/3 is given twice" in err and str(copy) in err, err


def test_merge_refuses_a_shard_folder_without_its_lock(three_shards, tmp_path: Path,
                                                       capsys) -> None:
    folders = [p.parent for p in three_shards]
    stripped = tmp_path / "stripped"
    shutil.copytree(folders[2], stripped)
    (stripped / SHARD_LOCK).unlink()
    code, err = _merge_cli([*folders[:2], stripped], tmp_path, capsys)
    assert code == 2 and f"no {SHARD_LOCK} in {stripped}" in err, err


def test_seven_shards_of_four_pairings_some_empty_merge_to_the_unsharded_lock(
        unsharded, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """More shards than pairings: shards 5 to 7 certify nothing and still say so (their lock
    holds no record, their stamp is there), so the merge knows none is missing. In process,
    one after another: the split, not the processes, is under test here."""
    project, expected_lock, expected_report = unsharded
    folders = []
    for k in range(1, 8):
        folder = tmp_path / f"shard-{k}"
        quiet = ["--quiet"] if k <= 4 else []  # an empty shard's lines are read below
        assert main(["certify", "--providers", str(project.providers_path), "--shard",
                     f"{k}/7", "--report-dir", str(folder), "--no-progress", *quiet]) in (0, 1)
        shard_lock = json.loads((folder / "latest" / SHARD_LOCK).read_text("utf-8"))
        assert len(shard_lock["certifications"]) == (1 if k <= 4 else 0)
        said = capsys.readouterr()
        if k > 4:  # no "certification (live; …)" header over no call at all
            assert "no pairing to certify in this run" in said.out + said.err
            assert "Clopper" not in said.out + said.err
        folders.append(str(folder))
    merged = tmp_path / "providers.lock.json"
    assert main(["merge", *folders, "--lock", str(merged), "--report-dir",
                 str(tmp_path / "merged"), "--quiet"]) == 1
    assert normalized(merged) == expected_lock
    assert report(tmp_path / "merged") == expected_report


def test_merge_refuses_a_lock_to_merge_into_when_no_shard_wrote_one(tmp_path: Path,
                                                                    capsys) -> None:
    folders = []
    for k in (1, 2):
        folder = tmp_path / f"scenarios-{k}"
        assert main(["scenarios", "run", str(ROOT / "scenarios" / "double_click.yaml"),
                     "--shard", f"{k}/2", "--report-dir", str(folder), "--quiet"]) == 0
        folders.append(folder)
    code, err = _merge_cli(folders, tmp_path, capsys)
    assert code == 2 and "no shard wrote lock records" in err, err
