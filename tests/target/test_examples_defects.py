"""`check --target` on the example service's defective twins (issue 30), through their shipped
profiles (``POST /jobs {"text": …}``, ``X-Owner``, no counter, a ``drill:``): each fails on its
own rule, and the one refusing every create stops at the preflight with exit 2. The twins are
``examples/drill/correct_service.py --defect …``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests._servers import free_port
from tests.drill.conftest import EXAMPLES, Service, provider_env

# over a few seconds each (drills, CI recipes): marked slow, so -n hands them out first
pytestmark = pytest.mark.slow

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize(("defect", "scenario", "rule"), [
    ("check-then-insert", "detection/duplicate_arrivals.yaml", "one_job_per_intent"),
    ("owner-blind", "same_key_two_owners.yaml", "owners_isolated"),
    ("replay-other-body", "mismatched_key.yaml", "mismatch_rejected_unchanged"),
    ("refuse-creates", "double_click.yaml", None),
])
def test_each_twin_fails_on_its_own_rule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        defect: str, scenario: str, rule: str | None) -> None:
    primary, fallback = free_port(), free_port()
    monkeypatch.setenv("PRIMARY_PORT", str(primary))
    monkeypatch.setenv("FALLBACK_PORT", str(fallback))
    monkeypatch.chdir(tmp_path)
    service = Service("correct_service.py", ["--timeout", "0.5", "--defect", defect, "--db",
                                             str(tmp_path / "j.db")],
                      provider_env(primary, fallback), tmp_path / "service.log")
    try:
        code = main(["check", "--target", service.url, "--target-profile",
                     str(EXAMPLES / f"{defect}.profile.yaml"), "--trials", "2",
                     "--scenarios", str(SCENARIOS / scenario),
                     "--report-dir", str(tmp_path / "report")])
    finally:
        service.stop()
    captured = capsys.readouterr()
    if rule is None:
        assert code == 2 and "refused every create with 422" in captured.err, captured.err
        return
    assert code == 1, captured.out
    events = json.loads((tmp_path / "report" / "latest" / "results.json").read_text())["events"]
    broken = {f["checker"] for e in events if e["type"] == "trial_series"
              for f in e.get("failures", ())}
    broken |= {c["name"] for e in events if e["type"] == "scenario_run"
               for c in e.get("checks", ()) if c["verdict"] == "invalid"}
    assert rule in broken, (broken, captured.out)
