"""`failover-harness check | head -2`: the reader going away is a normal end (issue 34).

The reader's end of the pipe is closed before the command starts, so its first write meets a
closed pipe (what `head -2` does once it has its lines): exit 141 (128 + SIGPIPE, as `yes | head
-1`), no "internal error", no traceback, no "Exception ignored" at the interpreter's exit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [["gate"], ["certify", "--no-progress"]])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, command: list[str]) -> None:
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *command], cwd=tmp_path, stdout=write,
            stderr=subprocess.PIPE, text=True, timeout=300,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr and "BrokenPipe" not in done.stderr
