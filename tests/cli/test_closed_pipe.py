"""`failover-harness check | head -2`: the reader going away is a normal end (issue 34).

The reader's end of the pipe is closed before the command starts, so its first write meets a
closed pipe (what `head -2` does once it has its lines). The command runs to its end as without
the pipe — its exit code, lock file and report — and says nothing about the pipe: no "internal
error", no traceback, no "Exception ignored" at the interpreter's exit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("command", "code"), [
    (["gate"], 3),  # no lock file yet: unknown
    (["certify", "--no-progress"], 0),
    (["check"], 0),
])
def test_a_closed_pipe_ends_the_command_normally(tmp_path: Path, command: list[str],
                                                 code: int) -> None:
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *command], cwd=tmp_path, stdout=write,
            stderr=subprocess.PIPE, text=True, timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    finally:
        os.close(write)
    assert done.returncode == code, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr and "BrokenPipe" not in done.stderr
    assert (tmp_path / "reports" / "latest" / "results.json").exists()  # ran to its end
