"""`gate --lock nope.lock.json` says which lock file it read and that it is missing, and its fix
keeps every path option, so following it ends the loop (issue 34, M2)."""

from __future__ import annotations

import shlex
import shutil

import pytest

from harness.cli import main
from tests.contracts.conftest import Project, provider


def test_a_missing_lock_file_is_named_and_the_fix_keeps_the_path_options(
        project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_providers({"primary": provider(), "fallback": provider()})
    shutil.move(project.contracts, project.root / "elsewhere")
    paths = ["--providers", "providers.yaml", "--contracts", "elsewhere",
             "--lock", "nope.lock.json"]
    assert main(["gate", *paths]) == 3
    out = capsys.readouterr().out
    assert "in the lock file: nope.lock.json is missing" in out, out
    fixes = [line.split("fix: run: ", 1)[1] for line in out.splitlines() if "fix: run: " in line]
    assert len(fixes) == 2, out
    for fix in fixes:
        words = shlex.split(fix)
        assert words[:2] == ["failover-harness", "certify"], fix
        for option, value in zip(paths[::2], paths[1::2], strict=True):
            assert words[words.index(option) + 1] == value, fix
        assert main([*words[1:], "--no-progress"]) == 0  # following it, word for word
    capsys.readouterr()
    assert not (project.root / "providers.lock.json").exists()  # the lock named was written
    assert main(["gate", *paths]) == 0, capsys.readouterr().out
