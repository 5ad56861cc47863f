"""Every command that judges writes the same report folder, from the same model: ``check``,
``scenarios run``, ``explore`` (a violation and a clean search), ``certify``, ``gate``, and
``replay`` (of a run folder and of an explore repro). Each folder's results.json validates
against the one schema, its junit.xml against the JUnit XSD, and its exit code is the verdict's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.reports import FILES
from harness.reports.schema import validate_results

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
OOO = str(ROOT / "scenarios" / "out_of_order_completion.yaml")
EXIT = {"pass": 0, "fail": 1, "unknown": 3}


def judged(folder: Path, command: str, code: int) -> dict[str, object]:
    """The checks every report folder passes; its results.json."""
    folder = folder.resolve()
    assert {p.name for p in folder.iterdir()} >= set(FILES)
    results = json.loads((folder / "results.json").read_text("utf-8"))
    validate_results(results)
    assert results["command"] == command and results["exit_code"] == code
    assert EXIT[results["verdict"]] == code
    xmlschema = pytest.importorskip("xmlschema")
    xmlschema.XMLSchema(str(HERE / "junit.xsd")).validate(
        (folder / "junit.xml").read_text("utf-8"))
    assert (folder / "summary.md").read_text("utf-8").startswith(
        f"## failover-harness {command}: ")
    assert "<script" not in (folder / "index.html").read_text("utf-8")
    return dict(results)


def _types(results: dict[str, object]) -> list[str]:
    return [e["type"] for e in results["events"]]  # type: ignore[attr-defined,index]


def _printed(out: str, what: str) -> Path:
    match = re.search(rf"^{what}: (\S+)", out, re.MULTILINE)
    assert match, out
    return Path(match.group(1))


def test_scenarios_run_and_replay_of_its_run_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scenarios", "run", OOO, "--target", "mutant:last-write-wins",
                 "--report-dir", str(tmp_path / "a")])
    out = capsys.readouterr().out
    results = judged(tmp_path / "a" / "latest", "scenarios run", code)
    assert code == 1 and _types(results) == ["scenario_run"]
    replay = re.search(r"replay: failover-harness replay (\S+)", out)
    assert replay
    code = main(["replay", replay.group(1), "--report-dir", str(tmp_path / "b")])
    results = judged(tmp_path / "b" / "latest", "replay", code)
    assert code == 1 and _types(results) == ["scenario_run", "replay"]


def test_explore_a_violation_its_replay_and_a_clean_search(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--target", "mutant:check-then-insert", "--workload",
                 "double-click", "--seed", "3", "--budget", "100", "--report-dir",
                 str(tmp_path / "a")])
    out = capsys.readouterr().out
    results = judged(tmp_path / "a" / "latest", "explore", code)
    assert code == 1 and _types(results) == ["explore_result"]
    event = results["events"][0]  # type: ignore[index]
    assert event["schedule"] and event["repro_dir"] and event["replay_command"]
    repro = _printed(out, "repro")
    assert repro.parent.parent.resolve() == (tmp_path / "a" / "latest").resolve()
    code = main(["replay", str(repro), "--target", "mutant:check-then-insert",
                 "--report-dir", str(tmp_path / "b")])
    results = judged(tmp_path / "b" / "latest", "replay", code)
    assert code == 1 and _types(results) == ["explore_result", "replay"]
    code = main(["explore", "--seed", "8", "--budget", "40", "--report-dir", str(tmp_path / "c")])
    results = judged(tmp_path / "c" / "latest", "explore", code)
    assert code == 0 and results["events"][0]["verdict"] == "passed"  # type: ignore[index]


def test_certify_gate_and_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    code = main(["gate", "--report-dir", "gate-before"])
    results = judged(tmp_path / "gate-before" / "latest", "gate", code)
    assert code == 3 and _types(results) == ["gate"]  # nothing certified yet: unknown
    code = main(["certify", "--no-progress", "--report-dir", "certify"])
    results = judged(tmp_path / "certify" / "latest", "certify", code)
    assert code == 0 and set(_types(results)) == {"certification"}
    code = main(["gate", "--report-dir", "gate-after"])
    assert judged(tmp_path / "gate-after" / "latest", "gate", code) and code == 0
    code = main(["check", "--scenarios", str(ROOT / "scenarios"), "--no-certify",
                 "--report-dir", "check"])
    results = judged(tmp_path / "check" / "latest", "check", code)
    assert code == 0
    shipped = len(list((ROOT / "scenarios").glob("*.yaml")))
    assert _types(results) == ["scenario_run"] * shipped + ["detection_matrix", "gate"]
