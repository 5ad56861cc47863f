"""``failover-harness check --target``: the main job on a user's own service (the example services
of examples/, run as processes), its report folder (schema-valid results.json, XSD-valid
junit.xml naming each flaw), the project file, and no secret in any file or line of output."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.reports.schema import validate_results
from tests.detection.conftest import PROFILE, ProcessService
from tests.reports.browser import layout

ROOT = Path(__file__).resolve().parents[2]
XSD = ROOT / "tests" / "reports" / "junit.xsd"
GAP_FLAWS = "store-gap,sticky-lock,raw-body-key,no-replay-header"
TOKEN = "tok-alice-9f3KqL2vXw"  # a bearer token the run sends (the toy service takes any)
# each flaw of the gap service, and the failure the report must name for it (JUnit message)
FLAWS = {
    "store-gap": "the handler ran again for a duplicate (a second side effect)",
    "sticky-lock": "a key stuck in progress after a handler failure",
    "raw-body-key": "a new job for the same intent sent again",
    "no-replay-header": "a replay not marked as a replay",
}


@pytest.fixture
def services() -> Iterator[dict[str, ProcessService]]:
    """The example services a test started (as processes), stopped after it."""
    started: dict[str, ProcessService] = {}
    yield started
    for service in started.values():
        service.stop()


def _start(services: dict[str, ProcessService], tmp_path: Path, kind: str,
           *args: str) -> ProcessService:
    service = ProcessService(kind, tmp_path / f"{kind}.db", list(args), tmp_path / f"{kind}.log")
    services[kind] = service
    return service


def _junit_cases(folder: Path) -> list[ET.Element]:
    xmlschema = pytest.importorskip("xmlschema")
    text = (folder / "junit.xml").read_text("utf-8")
    xmlschema.XMLSchema(str(XSD)).validate(text)
    return ET.fromstring(text).findall(".//testcase")


def _every_file(folder: Path) -> Iterator[tuple[Path, str]]:
    for path in folder.rglob("*"):
        if path.is_file():
            yield path, path.read_text("utf-8", errors="replace")


@pytest.mark.slow
def test_check_target_on_the_gap_example_exits_1_naming_each_flaw_in_junit(
        services: dict[str, ProcessService], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    gap = _start(services, tmp_path, "gap", "--flaws", GAP_FLAWS, "--store-ms", "60")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"{TOKEN}: alice\n", "utf-8")
    monkeypatch.chdir(tmp_path)  # no providers.yaml here: certification and gate are skipped
    code = main(["check", "--target", gap.url, "--target-profile", str(PROFILE),
                 "--tokens-file", str(tokens), "--trials", "2", "--junit", "ci/junit.xml"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    folder = (tmp_path / "reports" / "latest").resolve()
    results = json.loads((folder / "results.json").read_text("utf-8"))
    validate_results(results)
    assert results["command"] == "check" and results["exit_code"] == 1
    assert results["targets"] == [gap.url]
    cases = _junit_cases(folder)
    failures = {c.get("name", ""): (c.find("failure").get("message", "")  # type: ignore[union-attr]
                                    + (c.find("failure").text or ""))  # type: ignore[union-attr]
                for c in cases if c.find("failure") is not None}
    for flaw, title in FLAWS.items():
        assert any(title in text for text in failures.values()), (flaw, sorted(failures))
    # a testcase per checker × arrival pattern, per scenario × target
    names = {(c.get("classname"), c.get("name")) for c in cases}
    detection = "detection.service.duplicate_arrivals"  # a name, not the URL
    for pattern in ("burst", "staggered", "straddle"):
        assert (detection, f"one_side_effect_per_click [{pattern}]") in names
    assert ("scenarios.service", "timeout_unknown") in names  # not applicable: skipped
    assert not any("://" in (c or "") for c, _ in names)
    # a failure's text carries the first failing trial and the exact replay command
    stuck = next(text for text in failures.values() if FLAWS["sticky-lock"] in text)
    assert "first seen in" in stuck and "run this trial again: failover-harness replay " in stuck
    assert f"--tokens-file {tokens}" in stuck
    assert (tmp_path / "ci" / "junit.xml").read_text() == (folder / "junit.xml").read_text()
    assert "no providers.yaml: certification and gate skipped" in out
    assert "check: FAIL (exit 1)" in out
    # the live output fits on a screen and ends in a summary naming each broken promise once,
    # with where and how often it broke, and one replay command per run
    lines = out.splitlines()
    assert len(lines) <= 40, out
    summary = out.split("── summary ", 1)[1]
    for promise in ("one_side_effect_per_click", "retry_after_failure_served",
                    "identical_retry_replayed", "one_job_per_intent"):
        assert len(re.findall(rf"^  {promise}: .*\d+/\d+", summary, re.M)) == 1, (promise, out)
    replays = re.findall(r"^      replay: (failover-harness replay .*)$", summary, re.M)
    assert replays and len(replays) == len(set(replays))
    assert "promise broken (" not in out and "FAILURE:" not in out  # detail: --verbose
    # the bearer token was sent on every request, and shows nowhere
    assert TOKEN not in out + err
    for path, text in _every_file(folder):
        assert TOKEN not in text, path
    # the page, as Chromium lays it out: the losers' histograms and the first failing trials
    page = layout(folder / "index.html", tmp_path / "chromium")
    assert {h["pattern"] for h in page["histograms"]} == {"burst", "staggered", "straddle"}
    assert all(h["visible"] and any(b["width"] > 0 for b in h["bars"])
               for h in page["histograms"])
    firsts = [f for f in page["first_failures"] if f["timeline"] is not None]
    assert firsts and all(f["timeline"]["visible"] and f["timeline"]["marks"] for f in firsts)
    assert any(FLAWS["store-gap"] in f["title"] for f in firsts)


def test_check_target_on_the_correct_example_exits_0(
        services: dict[str, ProcessService], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    correct = _start(services, tmp_path, "correct")
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--target", correct.url, "--target-profile", str(PROFILE),
                 "--trials", "2", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    folder = tmp_path / "reports" / "latest"
    validate_results(json.loads((folder / "results.json").read_text("utf-8")))
    assert not any(c.find("failure") is not None or c.find("error") is not None
                   for c in _junit_cases(folder))


def test_a_project_file_holds_the_target_and_flags_win(
        services: dict[str, ProcessService], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    gap = _start(services, tmp_path, "gap", "--flaws", "raw-body-key")
    (tmp_path / "ci").mkdir()
    (tmp_path / "failover-harness.yaml").write_text(
        "version: 1\n"
        f"target: {gap.url}\n"
        f"target_profile: {PROFILE}\n"
        f"scenarios: [{ROOT / 'scenarios' / 'detection' / 'replay_fidelity.yaml'}]\n"
        "trials: 1\n"
        "report_dir: ci/reports\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 1  # a bare `check`, as CI runs it
    out = capsys.readouterr().out
    assert "a new job for the same intent sent again" in out
    results = json.loads((tmp_path / "ci" / "reports" / "latest" / "results.json").read_text())
    assert [e["scenario"] for e in results["events"]] == ["replay_fidelity"]
    # a flag wins over the file: another folder
    assert main(["check", "--report-dir", str(tmp_path / "elsewhere")]) == 1
    assert (tmp_path / "elsewhere" / "latest" / "results.json").is_file()


def test_a_broken_project_file_is_exit_2_naming_the_line_and_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "failover-harness.yaml").write_text(
        "version: 1\ntarget: http://127.0.0.1:1\ntrails: 20\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "failover-harness.yaml:3 (trails): unknown setting 'trails'" in err
    assert "fix: use one of:" in err and "trials" in err
    assert not (tmp_path / "reports").exists()
    (tmp_path / "failover-harness.yaml").write_text("trials: many\n", "utf-8")
    assert main(["check"]) == 2
    assert "failover-harness.yaml:1 (trials): trials must be a whole number" in (
        capsys.readouterr().err)


@pytest.mark.postgres
def test_a_dsn_password_appears_in_no_file_and_no_line_of_output(
        pg_password_dsn: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    dsn, password = pg_password_dsn  # a role of this test whose password the server checks
    head, _, tail = dsn.partition("://")
    user, _, host = tail.partition("@")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    # a scenario whose verdict is unknown: its run folder and replay command name the database
    (scenarios / "unread_race.yaml").write_text("""
name: unread_race
intents: {x: {contract: c, input: {}, policy: {max_open_attempts: 2}}}
providers:
  slow: {latency: 9, outcome: result, result: {n: 1}}
  fast: {latency: 1, outcome: result, result: {n: 2}}
steps:
  - {at: 0, create: {key: k, intent: x}, save: job}
  - {at: 0, attempt: {job: job, provider: slow, name: A}}
  - {at: 1, attempt: {job: job, provider: fast, name: B}}
checkers: [late_result_discarded_recorded]
""", "utf-8")
    code = main(["check", "--db", dsn, "--scenarios", str(scenarios), "--no-certify",
                 "--providers", str(tmp_path / "none.yaml"),
                 "--report-dir", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert code in (1, 3), out + err
    replay = next(line for line in out.splitlines() if "replay: failover-harness replay" in line)
    assert f"--target {head}://{user.split(':')[0]}@{host}" in replay  # runnable, no password
    assert password not in out + err
    for path, text in _every_file(tmp_path / "reports"):
        assert password not in text, path


def test_a_service_refusing_every_token_is_one_unknown_with_its_evidence_kept(
        answering: Callable[..., str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # tokens the service accepts for reads but refuses for writes (a read-only token): the
    # preflight's read passes, every create is refused 401 (refused for reads too is exit 2:
    # tests/scenarios/test_preflight.py)
    url = answering(401, {"error": "unauthenticated"}, reads=(404, {"code": "not_found"}),
                    paths={"/healthz": (200, {"status": "ok"})})  # API.md's health check
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tok-alice-1234: alice\ntok-bob-5678: bob\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--target", url, "--tokens-file", str(tokens), "--trials", "1"])
    out = capsys.readouterr().out
    assert code == 3, out  # nothing the service did shows a broken promise: unknown
    folder = (tmp_path / "reports" / "latest").resolve()
    results = json.loads((folder / "results.json").read_text("utf-8"))
    series = [e for e in results["events"] if e["type"] == "trial_series" and e["unknowns"]]
    assert series
    for event in series:  # an unknown trial keeps its run folder and its replay, like a failure
        first = event["unknowns"][0]["first"]
        assert first["replay_command"].startswith("failover-harness replay ")
        assert Path(first["run_dir"]).is_dir()
    # the same cause in every run is one line with one fix, not one per scenario
    summary = (folder / "summary.md").read_text("utf-8")
    unknown = summary.split("### Unknown", 1)[1].split("###", 1)[0]
    items = [line for line in unknown.splitlines() if line.startswith("- ")]
    assert 1 <= len(items) <= 5, unknown
    assert sum("check --tokens-file" in line for line in items) == 1, unknown
    assert any(" scenarios (" in line for line in items), unknown
