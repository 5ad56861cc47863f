"""The profile fields for detection (replay header, fingerprint, lease, error policy, side-effect
counter, handler fault): the shipped example profiles load, mistakes name the line and the fix,
and a counter that cannot be read is exit 2, not a verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.errors import ConfigError
from harness.scenarios.model import Scenario
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets import open_target
from harness.scenarios.targets.base import Target
from harness.scenarios.targets.service import load_profile
from tests.detection.conftest import DETECTION, PROFILE, SQL_PROFILE, Start


def test_the_example_profiles_load() -> None:
    jobs = load_profile(PROFILE)
    assert (jobs.lease_s, jobs.on_handler_error, jobs.fingerprint) == (0.5, "retry", "json")
    assert jobs.side_effects is not None and jobs.side_effects.http is not None
    fault = jobs.fault("handler_error")  # the default: return-500
    assert fault is not None and fault.path == "/_faults/fail-next"
    assert (raised := jobs.fault("raise")) is not None and raised.path == "/_faults/raise-next"
    sql = load_profile(SQL_PROFILE)
    assert sql.side_effects is not None and sql.side_effects.sql is not None
    assert sql.side_effects.sql.url_env == "JOBS_DB"
    target = open_target("http://127.0.0.1:9", profile=PROFILE)
    assert {"side_effects", "handler_faults"} <= target.capabilities
    assert target.promises() == {"policy": "retry", "lease_ms": 500}


BASE = PROFILE.read_text(encoding="utf-8")


@pytest.mark.parametrize(("old", "new", "line", "problem", "fix"), [
    ("  http: {method: GET, path: /_stats, field: jobs}",
     "  http: {method: GET, path: /_stats, field: jobs}\n  sql: {url: 'sqlite:///x.db', "
     "query: SELECT 1}", 13, "side_effects needs exactly one of http or sql",
     "write side_effects:"),
    ("  http: {method: GET, path: /_stats, field: jobs}",
     "  sql: {url: 'mysql://db/jobs', query: SELECT 1}", 14,
     "'mysql' databases are not supported", "sqlite:///path/file.db"),
    ("  return-500: {method: POST, path: /_faults/fail-next}",
     "  return-500: {method: POST}", 16,
     "faults.return-500 needs exactly one of path or command", "[touch, /tmp/fail-next]"),
    ("default_fault: return-500", "default_fault: explode", 18,
     "default_fault names 'explode', which faults: does not declare",
     "write one of: return-500, raise"),
    ("lease_s: 0.5 ", "lease_s: -1  ", 11, "greater than 0", "write a value greater than 0"),
    ("on_handler_error: retry", "on_handler_error: again", 12, "'again' is not allowed here",
     "write one of: retry, final"),
])
def test_a_wrong_detection_field_names_the_line(
        tmp_path: Path, old: str, new: str, line: int, problem: str, fix: str) -> None:
    assert old in BASE
    path = tmp_path / "bad.profile.yaml"
    path.write_text(BASE.replace(old, new), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    assert problem in caught.value.message and caught.value.line == line
    assert fix in (caught.value.fix or "")


def test_an_unset_database_variable_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        open_target("http://127.0.0.1:9", profile=SQL_PROFILE, env={})
    assert "environment variable JOBS_DB is not set" in caught.value.message
    assert "export JOBS_DB=sqlite:///" in (caught.value.fix or "")


def test_a_counter_that_answers_no_number_is_exit_2(
        start_service: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = start_service("correct").url
    broken = tmp_path / "broken.profile.yaml"
    broken.write_text(BASE.replace("field: jobs", "field: total"), encoding="utf-8")
    code = main(["scenarios", "run", str(DETECTION / "replay_fidelity.yaml"), "--target", url,
                 "--target-profile", str(broken), "--report-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "GET /_stats field total answered None, not a number" in err
    assert "Traceback" not in err


def test_a_password_in_a_counter_url_never_reaches_the_report(
        start_service: Start, profiled: Callable[..., Target],
        detection: dict[str, Scenario]) -> None:
    url = start_service("correct").url
    secret = "postgresql://harness:s3cret-canary@127.0.0.1:9/jobs"
    target = profiled(url, SQL_PROFILE, env={"JOBS_DB": secret})
    with pytest.raises(ConfigError) as caught:
        run_scenario(detection["replay_fidelity"], target)
    assert "s3cret-canary" not in str(caught.value)
    assert "postgresql://harness:[REDACTED]@127.0.0.1:9/jobs" in caught.value.message
