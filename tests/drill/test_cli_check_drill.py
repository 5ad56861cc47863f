"""`check --target` with a profile that declares providers: the drills run, and the timeout,
out-of-order, late-result and hedge scenarios a jobs-only service cannot play are judged by the
drill (said in the output and in results.json) instead of "not applicable"."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.campaign.check_drill import JUDGED_BY
from harness.cli import main
from tests._servers import free_port
from tests.drill.conftest import provider_env

# over a few seconds each (drills, CI recipes): marked slow, so -n hands them out first
pytestmark = pytest.mark.slow

PROFILE = """\
name: correct-drill-example
capabilities: [jobs]
operations:
  create_job: {method: POST, path: /jobs, key_header: Idempotency-Key, body: {text: "{prompt}"}}
  get_job: {method: GET, path: "/jobs/{job_id}"}
owners: {header: X-Owner, value: "{owner}"}
drill:
  submit:
    path: /jobs
    headers: {Idempotency-Key: "{key}", X-Owner: drill}
    body: {text: "Summarise ticket {tag} in one line."}
  observe:
    path: "/jobs/{job_id}"
    headers: {X-Owner: drill}
    result_field: result.text
    statuses: {succeeded: [succeeded], failed: [failed], running: [queued, running]}
    races: {path: "/jobs/{job_id}/races"}
  providers:
    - {name: gpt, wire: openai, role: primary, port: "${PRIMARY_PORT}"}
    - {name: claude, wire: anthropic, role: fallback, port: "${FALLBACK_PORT}"}
  timeouts: {provider_s: 0.4, job_s: 5, settle_s: 0.6}
  policy: {max_billed_calls: 2, hedge: {allowed: true, after_s: 0.4}}
"""



@pytest.mark.parametrize(("script", "verdicts"), [
    ("correct_service.py", {"passed"}),
    # the SDK retries the held late primary until it gives up on it: that answer never
    # reaches the service, so the late-answer scenarios are unknown (no evidence), never passed
    ("sdk_retries_service.py", {"failed", "unknown"}),
])
def test_cli_check_judges_the_timeout_scenarios_by_the_drill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        start_service: Callable[..., object], script: str, verdicts: set[str],
        workspace: Path) -> None:
    monkeypatch.chdir(workspace)  # check certifies ./providers.yaml: its lock file lands here
    primary, fallback = free_port(), free_port()
    monkeypatch.setenv("PRIMARY_PORT", str(primary))
    monkeypatch.setenv("FALLBACK_PORT", str(fallback))
    service = start_service(script, ["--timeout", "0.4"], provider_env(primary, fallback))
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    main(["check", "--target", service.url, "--target-profile", str(profile),  # type: ignore[attr-defined]
          "--trials", "1", "--scenarios", str(Path(__file__).parents[2] / "scenarios"),
          "--report-dir", str(tmp_path / "report")])
    out = capsys.readouterr().out
    events = json.loads((tmp_path / "report" / "latest" / "results.json").read_text())["events"]
    drilled = {e["scenario"]: e for e in events
               if e["type"] == "scenario_run" and e["source"] == "drill"}
    assert set(drilled) == set(JUDGED_BY)
    assert {e["verdict"] for e in drilled.values()} == verdicts
    assert all(e["reason"].startswith("judged by the drill") for e in drilled.values())
    assert "judged by the drill" in out
    assert {e["drill"] for e in events if e["type"] == "drill_run"} >= {"hang", "late"}
    if "failed" in verdicts:  # the SDK's retries: more billed calls than the hedge allows
        hedge = drilled["hedge_bound"]
        assert hedge["verdict"] == "failed"
        # the headline names the promise that broke (not "drill"): the scenario's own rule
        [first] = hedge["checks"]
        assert (first["verdict"], first["name"]) == ("invalid", "within_hedge")
        # a broken promise is attributed only to the scenarios whose rule it is: the bill
        # (billed_within_bound) is no scenario's rule, so the late-result scenarios are not
        # failed by it
        for event in drilled.values():
            names = {c["name"] for c in event["checks"]}
            assert names == set(JUDGED_BY[event["scenario"]][1]), event["scenario"]
            assert "billed_within_bound" not in names
        assert drilled["cancel_then_late_result"]["verdict"] != "failed"
        assert "(drill)" not in out
        # counts are of intents: never more broken than drilled
        for event in drilled.values():
            for got, of_ in re.findall(r"broken in (\d+) of (\d+) intents?", event["reason"]):
                assert int(got) <= int(of_), event["reason"]
