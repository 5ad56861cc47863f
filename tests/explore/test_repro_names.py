"""A repro folder is named after what its race shows (not the workload that was explored), and
names every promise it breaks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main


def test_the_repro_folder_names_what_it_shows_and_every_broken_promise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["explore", "--target", "mutant:check-then-insert", "--workload", "all",
                 "--budget", "200", "--seed", "7"])
    out = capsys.readouterr().out
    assert code == 1, out
    broken = re.search(r"^VIOLATED  (.+?) after ", out, re.M)
    folder = re.search(r"^repro: (\S+)", out, re.M)
    assert broken and folder, out
    name = Path(folder.group(1)).name
    shown = name.split("-", 1)[1]  # <stamp>-<what it shows>-<promise+promise…>
    shows = next((s for s in ("double-click", "mismatch", "claims", "timeouts")
                  if shown.startswith(s + "-")), None)
    assert shows is not None, name
    promises = shown.removeprefix(shows + "-")
    assert promises.split("+") == [p.strip() for p in broken.group(1).split(",")], (name, out)
    assert "handler-failure" not in name  # a mutant store has no handler to fail
