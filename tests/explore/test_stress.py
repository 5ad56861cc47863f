"""``--stress``: free-running threads on an in-process store and on a real ``serve`` process."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.clock import EPOCH, ManualClock
from harness.explore.plan import RandomDraw
from harness.explore.stress import run_free
from harness.explore.workloads import build_plan
from harness.scenarios.targets import open_target
from tests.service.serving import TOKENS, ServeProcess


def test_stress_finds_check_then_insert_and_writes_an_unreplayable_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # No controller: the mutant's own rendezvous (a check-then-insert that waits for its twin)
    # and the operating system make the race.
    code = main(["explore", "--stress", "--target", "mutant:check-then-insert", "--workload",
                 "double-click", "--seed", "2", "--budget", "50", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.splitlines()[0] == "explore: seed 2"
    assert "(free-running: not replayable)" in out
    folder = Path(re.search(r"^history and explanation: (\S+)", out, re.MULTILINE)[1])
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert results["replayable"] is False and results["replay"] is None
    assert "duplicates_get_same_job" in results["broken"]
    assert not (folder / "scenario.yaml").exists()
    assert "no schedule was recorded" in (folder / "explanation.txt").read_text("utf-8")


def test_stress_on_the_reference_store_is_clean(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--stress", "--target", f"sqlite:///{tmp_path / 's.db'}",
                 "--seed", "3", "--budget", "60", "--workload", "double-click",
                 "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no violation in 60 rounds" in out
    assert re.search(r"owners_isolated +exercised in [1-9]\d* of \d+ rounds", out), out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("stress-serve")
    tokens = folder / "tokens.yaml"
    tokens.write_text("".join(f"{t}: {o}\n" for t, o in TOKENS.items()), encoding="utf-8")
    server = ServeProcess(db=f"sqlite:///{folder / 'harness.db'}",
                          log_path=folder / "serve.log", tokens_file=tokens,
                          extra=["--no-access-log"])
    try:
        server.wait_ready()
        yield server.url, tokens
    finally:
        server.stop()


def test_stress_drives_a_service_over_http(served: tuple[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    url, tokens = served
    code = main(["explore", "--stress", "--target", url, "--tokens-file", str(tokens),
                 "--seed", "4", "--budget", "12", "--workload", "double-click",
                 "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"stress: target {url}" in out and "no violation in 12 rounds" in out


def test_a_free_run_over_http_really_creates_and_claims(served: tuple[str, Path]) -> None:
    url, tokens = served
    target = open_target(url, tokens_file=tokens)
    try:
        plan = build_plan("claims", RandomDraw(random.Random(6)), 3)
        clock = ManualClock(EPOCH)
        with target.session(clock, "free-http", 4) as session:
            outcome = run_free(plan, session, clock, "free-http", fresh_owners=False)
    finally:
        target.close()
    oks = {(op.f, op.value.get("outcome")) for op in outcome.history if op.type == "ok"}
    assert ("create", None) in oks and ("start", None) in oks
    assert ("succeeded", "won") in oks or ("failed", None) in oks
    assert outcome.status == "held", outcome.checks
