"""tests/_bytecode.py: where the environment forbids writing bytecode beside the sources, the
suite's processes keep it in a cache of their own outside the checkout, and pass that on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOW = ("import json, os, sys, tests; print(json.dumps([sys.pycache_prefix, "
        "sys.dont_write_bytecode, os.environ.get('PYTHONPYCACHEPREFIX'), "
        "os.environ.get('PYTHONDONTWRITEBYTECODE')]))")


def _show(tmp_path: Path, **env: str) -> list[object]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    done = subprocess.run([sys.executable, "-c", SHOW], cwd=ROOT, capture_output=True,
                          text=True, timeout=60,
                          env={**base, "XDG_CACHE_HOME": str(tmp_path), **env})
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def test_no_bytecode_beside_the_sources_means_a_cache_outside_the_checkout(
        tmp_path: Path) -> None:
    prefix = str(tmp_path / "failover-harness" / "pycache")
    assert _show(tmp_path, PYTHONDONTWRITEBYTECODE="1") == [prefix, False, prefix, None]
    assert (tmp_path / "failover-harness" / "pycache").is_dir()


def test_the_cache_is_left_alone_when_bytecode_may_be_written_or_it_is_turned_off(
        tmp_path: Path) -> None:
    assert _show(tmp_path) == [None, False, None, None]
    assert _show(tmp_path, PYTHONDONTWRITEBYTECODE="1", HARNESS_TEST_PYCACHE="0") == [
        None, True, None, "1"]
    own = str(tmp_path / "own")
    assert _show(tmp_path, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=own) == [
        own, True, own, "1"]
    assert not (tmp_path / "failover-harness").exists()
