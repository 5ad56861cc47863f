"""Wrong tokens are a configuration error (qa Q6): before any scenario, a read of a missing job
per owner; a service refusing an owner's token (401/403 for everyone) makes ``scenarios run`` and
``check --target`` exit 2 naming the owner and the fix, with no report folder — not a dozen
unknown scenarios repeating the same fix. A token the service accepts passes (404 is fine)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from tests.acceptance.conftest import answering

__all__ = ["answering"]  # the fixture
ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "double_click.yaml"
PROFILE = ROOT / "examples" / "jobs.profile.yaml"


def _tokens(tmp_path: Path) -> Path:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tok-alice-1234: alice\ntok-bob-5678: bob\n", "utf-8")
    return tokens


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("command", ["scenarios", "check"])
@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_is_exit_2_naming_the_owner(
        answering: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], command: str, status: int) -> None:
    url = answering(status, {"code": "unauthenticated" if status == 401 else "forbidden"})
    monkeypatch.chdir(tmp_path)  # check: no providers.yaml, no scenarios/ (the shipped ones)
    reports = tmp_path / "reports"
    args = (["scenarios", "run", str(SCENARIO)] if command == "scenarios" else ["check"]) + [
        "--target", url, "--tokens-file", str(_tokens(tmp_path)), "--report-dir", str(reports)]
    code, text = _run(args, capsys)
    assert code == 2, text
    assert f"owner alice's token was refused ({status}" in text
    assert "bob's too" in text and "--tokens-file" in text
    assert "Traceback" not in text and "tok-alice" not in text
    assert not reports.exists()  # bad input: nothing judged, nothing written


def test_a_profiled_service_refusing_a_request_without_a_token_is_exit_2(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = answering(401, {"code": "unauthenticated"})
    code, text = _run(["scenarios", "run", str(SCENARIO), "--target", url, "--target-profile",
                       str(PROFILE), "--report-dir", str(tmp_path / "r")], capsys)
    assert code == 2, text
    assert "refused a request without a token (401" in text and "--tokens-file" in text


def test_a_profiled_service_out_of_reach_is_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, text = _run(["scenarios", "run", str(SCENARIO), "--target", f"http://127.0.0.1:{port}",
                       "--target-profile", str(PROFILE), "--tokens-file", str(_tokens(tmp_path)),
                       "--report-dir", str(tmp_path / "r")], capsys)
    assert code == 2, text
    assert "cannot reach the target" in text and "ConnectError" in text


def test_a_token_the_service_accepts_passes_the_preflight(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # reads are answered 404 (a missing job: the token is fine); every write is a 500
    url = answering(500, {"code": "internal"}, reads=(404, {"code": "not_found"}),
                    paths={"/healthz": (200, {"status": "ok"})})  # API.md's health check
    code, text = _run(["scenarios", "run", str(SCENARIO), "--target", url, "--tokens-file",
                       str(_tokens(tmp_path)), "--report-dir", str(tmp_path / "r")], capsys)
    assert code in (1, 3), text  # judged (and nothing passes), not refused as bad input
