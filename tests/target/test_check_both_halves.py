"""`check --target` on a profile with a body template, owners by name and a ``drill:`` section
(issue 30 item 5): the scenarios and the drill run in one run, the detection suite's side-effect
promise is judged from the drill's fakes (no counter endpoint), and on the correct example service
nothing is broken and nothing unknown. The service is examples/drill/correct_service.py, judged
through its shipped profile once that describes the service's own API (``owners:`` and a body
template: ``POST /jobs {"text": …}``, ``X-Owner``), else through :data:`PROFILE`, written here for
the API it had before (``POST /v1/jobs {"input": {"text": …}}``, the owner as its bearer token)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests._servers import free_port
from tests.drill.conftest import EXAMPLES, Service, provider_env

PROFILE = """\
name: correct-example-own-api
capabilities: [jobs]
fingerprint: json
operations:
  create_job:
    method: POST
    path: /v1/jobs
    key_header: Idempotency-Key
    body: {input: {text: "{prompt}"}}
  get_job: {method: GET, path: "/v1/jobs/{job_id}"}
owners: {header: Authorization, value: "Bearer {owner}"}
drill:
  submit:
    path: /v1/jobs
    headers: {Idempotency-Key: "{key}"}
    body: {input: {text: "Summarise ticket {tag} in one line."}}
  observe:
    path: "/v1/jobs/{job_id}"
    result_field: result.text
    statuses: {succeeded: [succeeded], failed: [failed], running: [running, starting]}
    races: {path: "/v1/jobs/{job_id}/races"}
  providers:
    - {name: gpt, wire: openai, role: primary, port: "${PRIMARY_PORT}"}
    - {name: claude, wire: anthropic, role: fallback, port: "${FALLBACK_PORT}"}
  timeouts: {provider_s: 0.5, job_s: 5}
  policy: {max_billed_calls: 2, hedge: {allowed: true, after_s: 0.5}}
"""


def example_profile(tmp_path: Path) -> Path:
    """The example's shipped profile when it speaks the service's own API, else PROFILE."""
    shipped = EXAMPLES / "correct.profile.yaml"
    if "owners:" in shipped.read_text(encoding="utf-8"):
        return shipped
    written = tmp_path / "p.yaml"
    written.write_text(PROFILE, encoding="utf-8")
    return written


def verdicts(events: list[dict[str, Any]]) -> dict[str, str]:
    out = {}
    for e in events:
        if e["type"] in ("scenario_run", "trial_series"):
            out[e["scenario"]] = str(e.get("verdict") or e.get("outcome"))
        elif e["type"] == "drill_run":
            out[f"drill {e['drill']}"] = e["verdict"]
    return out


def test_both_halves_on_the_correct_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    primary, fallback = free_port(), free_port()
    monkeypatch.setenv("PRIMARY_PORT", str(primary))
    monkeypatch.setenv("FALLBACK_PORT", str(fallback))
    monkeypatch.chdir(tmp_path)  # no providers.yaml, no scenarios/ of the checkout
    service = Service("correct_service.py", ["--timeout", "0.5", "--db", str(tmp_path / "j.db")],
                      provider_env(primary, fallback), tmp_path / "service.log")
    try:
        profile = example_profile(tmp_path)
        code = main(["check", "--target", service.url, "--target-profile", str(profile),
                     "--trials", "1", "--report-dir", str(tmp_path / "report")])
    finally:
        service.stop()
    out = capsys.readouterr().out
    events = json.loads((tmp_path / "report" / "latest" / "results.json").read_text())["events"]
    seen = verdicts(events)
    assert not {k: v for k, v in seen.items() if v not in ("passed", "not_applicable")}, (seen, out)
    assert code == 0, out
    assert "drill hang" in seen and seen["duplicate_arrivals"] == "passed"
    assert seen["same_key_two_owners"] == "passed"  # owners by name: no tokens file
    assert "billed provider calls" in out
