"""A base URL that misses the service (every path answers 404) is diagnosed as such — exit 2,
"is the base URL right?" — not blamed on the side-effect counter or reported as broken
promises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("profile", [None, "examples/jobs.profile.yaml"])
def test_everything_answering_404_asks_whether_the_base_url_is_right(
        answering: Callable[..., str], profile: str | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = answering(404, {"detail": "Not Found"}) + "/wrong-prefix"
    monkeypatch.setenv("HARNESS_TOKENS", "tok-alice-1234=alice,tok-bob-5678=bob")
    monkeypatch.chdir(tmp_path)
    extra = ["--target-profile", str(ROOT / profile)] if profile else []
    code = main(["check", "--target", url, *extra, "--trials", "1"])
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert "is the base URL right?" in captured.err
    assert "side_effects" not in captured.err
    assert "fix: check --target" in captured.err
