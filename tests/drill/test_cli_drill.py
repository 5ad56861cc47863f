"""`failover-harness drill --target … --target-profile …` end to end on the example services:
exit codes, the report folder (drill_run events, lanes in index.html, the command to drill
again), profile and port errors (exit 2, file:line and the fix, nothing written)."""

from __future__ import annotations

import argparse
import json
import re
import socket
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

import harness.drill.engine as engine_module
from harness.cli import main
from harness.commands.drill_target import command
from harness.drill.causes import LATE_UNREACHED
from harness.drill.drills import Drill
from harness.drill.evidence import IntentEvidence
from harness.drill.findings import IntentVerdict
from harness.drill.judge import Setup
from tests._servers import free_port
from tests.drill.conftest import provider_env

PROFILE = """\
name: correct-example
drill:
  submit:
    path: /jobs
    headers: {Idempotency-Key: "{key}", X-Owner: "${DRILL_OWNER}"}
    body: {text: "Summarise ticket {tag} in one line."}
  observe:
    path: "/jobs/{job_id}"
    headers: {X-Owner: "${DRILL_OWNER}"}
    result_field: result.text
    statuses: {succeeded: [succeeded], failed: [failed], running: [queued, running]}
    attempts: {path: "/jobs/{job_id}/attempts"}
    races: {path: "/jobs/{job_id}/races"}
  providers:
    - {name: gpt, wire: openai, role: primary, port: "${PRIMARY_PORT}"}
    - {name: claude, wire: anthropic, role: fallback, port: "${FALLBACK_PORT}"}
  timeouts: {provider_s: 0.4, job_s: 5, settle_s: 0.6}
  policy: {max_billed_calls: 2, hedge: {allowed: true, after_s: 0.4}}
"""
SECRET = "owner-token-not-to-print"



@pytest.fixture
def drilled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            start_service: Callable[..., object]) -> Callable[..., tuple[int, Path, str]]:
    """Start an example on fresh ports, drill it, return (exit code, report folder, output)."""
    def run(script: str, drills: str, *, trials: int = 1, reach: bool = True,
            capsys: pytest.CaptureFixture[str], extra: tuple[str, ...] = ()
            ) -> tuple[int, Path, str]:
        primary, fallback = free_port(), free_port()
        monkeypatch.setenv("PRIMARY_PORT", str(primary))
        monkeypatch.setenv("FALLBACK_PORT", str(fallback))
        monkeypatch.setenv("DRILL_OWNER", SECRET)
        env = provider_env(primary, fallback) if reach else provider_env(free_port(),
                                                                          free_port())
        service = start_service(script, ["--timeout", "0.4"], env)
        profile = tmp_path / "service.profile.yaml"
        profile.write_text(PROFILE, encoding="utf-8")
        code = main(["drill", "--target", service.url,  # type: ignore[attr-defined]
                     "--target-profile", str(profile), "--drills", drills,
                     "--trials", str(trials), "--report-dir", str(tmp_path / "report"),
                     *extra])
        out = capsys.readouterr()
        return code, tmp_path / "report" / "latest", out.out + out.err
    return run


def _events(folder: Path) -> list[dict[str, object]]:
    return json.loads((folder / "results.json").read_text("utf-8"))["events"]  # type: ignore[no-any-return]


def test_cli_the_correct_example_passes(drilled: Callable[..., tuple[int, Path, str]],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, folder, out = drilled("correct_service.py", "control,hang,late,overload-429,reset",
                                trials=2, capsys=capsys)
    events = _events(folder)
    assert code == 0, out
    assert [e["drill"] for e in events] == ["control", "hang", "late", "overload-429", "reset"]
    assert {e["verdict"] for e in events} == {"passed"}
    assert SECRET not in out and SECRET not in (folder / "results.json").read_text("utf-8")


def test_cli_a_flawed_twin_fails_with_lanes_and_the_command(
        drilled: Callable[..., tuple[int, Path, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, folder, out = drilled("sdk_retries_service.py", "hang", capsys=capsys)
    assert code == 1, out
    [event] = _events(folder)
    rates = {p["promise"]: p for p in event["promises"]}  # type: ignore[attr-defined]
    assert rates["billed_within_bound"]["broken"] == 1
    html = (folder / "index.html").read_text("utf-8")
    assert "<svg" in html and "abandoned" in html and "winner claude#" in html
    assert "drill again: failover-harness drill --target" in out


def test_cli_unknown_when_the_service_never_calls_the_fakes(
        drilled: Callable[..., tuple[int, Path, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, folder, out = drilled("correct_service.py", "hang", reach=False, capsys=capsys)
    assert code == 3, out
    [event] = _events(folder)
    fix = event["unknowns"][0]["fix"]  # type: ignore[index]
    assert "OPENAI_BASE_URL=http://127.0.0.1:" in fix and "ANTHROPIC_BASE_URL=" in fix


def test_cli_profile_error_exits_2_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE.replace("wire: anthropic", "wire: gemini"), encoding="utf-8")
    code = main(["drill", "--target", "http://127.0.0.1:9", "--target-profile", str(profile),
                 "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2 and f"{profile}:16" in err and "fix:" in err
    assert not (tmp_path / "report").exists()


def test_cli_busy_port_exits_2_naming_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        monkeypatch.setenv("PRIMARY_PORT", str(busy.getsockname()[1]))
        monkeypatch.setenv("FALLBACK_PORT", str(free_port()))
        monkeypatch.setenv("DRILL_OWNER", SECRET)
        profile = tmp_path / "p.yaml"
        profile.write_text(PROFILE, encoding="utf-8")
        code = main(["drill", "--target", "http://127.0.0.1:9", "--target-profile",
                     str(profile), "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2 and f"{profile}:15" in err and "busy" in err and "fix:" in err
    assert not (tmp_path / "report").exists()


def test_cli_unset_variable_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PRIMARY_PORT", raising=False)
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    code = main(["drill", "--target", "http://127.0.0.1:9", "--target-profile", str(profile),
                 "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2 and "PRIMARY_PORT" in err and f"{profile}:15" in err


def test_cli_header_option_errors_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --header, or one naming an unset variable, exits 2 before anything runs."""
    monkeypatch.setenv("PRIMARY_PORT", str(free_port()))
    monkeypatch.setenv("FALLBACK_PORT", str(free_port()))
    monkeypatch.setenv("DRILL_OWNER", SECRET)
    monkeypatch.delenv("NO_SUCH_HEADER_VAR", raising=False)
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    base = ["drill", "--target", "http://127.0.0.1:9", "--target-profile", str(profile),
            "--report-dir", str(tmp_path / "report")]
    assert main([*base, "--header", "no colon here"]) == 2
    assert "--header" in capsys.readouterr().err
    assert main([*base, "--header", "X-Token: ${NO_SUCH_HEADER_VAR}"]) == 2
    err = capsys.readouterr().err
    assert "NO_SUCH_HEADER_VAR" in err and "--header" in err and "fix:" in err
    assert not (tmp_path / "report").exists()


def test_cli_redrill_command_hides_header_values() -> None:
    """The command that drills again keeps a header's ${VAR} and never a literal value."""
    args = argparse.Namespace(
        target="http://127.0.0.1:4000", target_profile=None, config=Path("route.json"),
        model=None, trials=2, port=[], contract_map=["route=ticket_triage"], providers=None,
        contracts=None, lock=Path("x.lock.json"),
        header=["x-portkey-config: ${PORTKEY_CONFIG}", f"Authorization: Bearer {SECRET}"])
    text = command(args, "hang")
    assert SECRET not in text
    assert "'x-portkey-config: ${PORTKEY_CONFIG}'" in text
    assert "'Authorization: <redacted>'" in text
    assert "--contract-map route=ticket_triage --lock x.lock.json" in text
    assert "--drills hang --trials 2" in text and "--model" not in text


def test_cli_an_unknown_drill_exits_2_with_the_nearest_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The scenario spelling (double_click) is accepted; a typo gets "did you mean", not the
    whole usage; nothing is written."""
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    code = main(["drill", "--target", "http://127.0.0.1:9", "--target-profile", str(profile),
                 "--drills", "dubble_click", "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2 and "did you mean double-click" in err and "usage:" not in err
    assert not (tmp_path / "report").exists()


def test_cli_an_intent_without_evidence_is_drilled_again(
        drilled: Callable[..., tuple[int, Path, str]], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The late drill's first intent is judged as a loaded machine leaves it (the judge's own
    finding for a late answer that never reached the service, put in place of the real one:
    the load, simulated); the drill drills a fresh intent for the trial after the round, judges
    the trial by it, and the report (and --verbose, as it happens) says how many intents were
    drilled again and why."""
    real, first = engine_module.judge_intent, list[str]()

    def loaded(ev: IntentEvidence, drill: Drill, setup: Setup) -> IntentVerdict:
        v = real(ev, drill, setup)
        if drill.name == "late" and not first:
            first.append(ev.tag)
            v.findings = [replace(f, verdict="unknown", message="the late answer never reached "
                                  "the service (simulated)", load=LATE_UNREACHED)
                          if f.promise == "one_winner_per_job" else f for f in v.findings]
        return v

    monkeypatch.setattr(engine_module, "judge_intent", loaded)
    code, folder, out = drilled("correct_service.py", "late", capsys=capsys,
                                extra=("--verbose",))
    assert code == 0, out
    # --verbose says it as it happens, with the cause
    assert re.search(r"late +trial 1: drilled again — [^\n]*" + re.escape(LATE_UNREACHED),
                     out), out
    # The machine's own load may add its words to the simulated one ("the looks at the job were
    # slow and the late answer ..."), or leave a fresh intent without evidence too: the report
    # names the simulated cause for the first intent in either case.
    said = re.compile(r"\d intents? drilled again: [^\n]*" + re.escape(LATE_UNREACHED))
    assert said.search(out), out
    [event] = _events(folder)
    again = event["drilled_again"]
    assert isinstance(again, list) and again, event
    assert LATE_UNREACHED in again[0]["reason"] and again[0]["intents"] >= 1, again
    rates = {p["promise"]: p for p in event["promises"]}  # type: ignore[attr-defined]
    assert (rates["one_winner_per_job"]["held"], rates["one_winner_per_job"]["unknown"]) == (1, 0)
    [intent] = json.loads((folder / "drill.json").read_text("utf-8"))["drills"]["late"]
    assert [a["request"] for a in intent["drilled_again"]][:1] == first != [intent["request"]]
    assert LATE_UNREACHED in intent["drilled_again"][0]["why"]
    for page in ("index.html", "summary.md", "junit.xml"):
        assert said.search((folder / page).read_text("utf-8")), page


def test_cli_drill_again_below_zero_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PRIMARY_PORT", str(free_port()))
    monkeypatch.setenv("FALLBACK_PORT", str(free_port()))
    monkeypatch.setenv("DRILL_OWNER", SECRET)
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    code = main(["drill", "--target", "http://127.0.0.1:9", "--target-profile", str(profile),
                 "--drill-again", "-1", "--report-dir", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert code == 2 and "--drill-again must be 0 or more" in err and "fix:" in err
    assert not (tmp_path / "report").exists()
