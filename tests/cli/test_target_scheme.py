"""`check --target 127.0.0.1:8801` (no scheme) says the URL needs http://, with or without a
profile, instead of blaming the profile or listing every kind of target (issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("target", "fixed"), [
    ("127.0.0.1:8801", "http://127.0.0.1:8801"),
    ("localhost:8801/api", "http://localhost:8801/api"),
    ("127.0.0.1:8801,127.0.0.1:8802", "http://127.0.0.1:8801,http://127.0.0.1:8802"),
])
@pytest.mark.parametrize("profile", [False, True])
def test_a_target_without_scheme_is_told_to_add_http(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        target: str, fixed: str, profile: bool) -> None:
    monkeypatch.chdir(tmp_path)
    extra = ["--target-profile", str(ROOT / "examples" / "jobs.profile.yaml")] if profile else []
    assert main(["check", "--target", target, *extra]) == 2
    err = capsys.readouterr().err
    assert f"target {target!r} has no scheme" in err, err
    assert f"fix: write --target {fixed}" in err, err
    assert "--target-profile describes" not in err
    assert not any(tmp_path.iterdir())  # bad input writes nothing
