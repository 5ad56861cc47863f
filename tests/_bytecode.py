"""Compiled bytecode for the test run, kept outside the checkout, when the environment forbids
writing it (``PYTHONDONTWRITEBYTECODE``, as some CI images and containers set).

Without a bytecode cache every Python the suite starts compiles what it imports again: each
xdist worker rewrites the assertions of every test module it collects (about 3 CPU-s of its
4.5 s collection), and each of the few hundred CLI and service processes compiles the harness
modules it imports. With it, each source file is compiled once per change. The cache lives in
``$XDG_CACHE_HOME/failover-harness/pycache`` (else ``~/.cache/…``), Python's own
``PYTHONPYCACHEPREFIX`` layout, so the checkout stays as clean as the variable meant it to be.
``HARNESS_TEST_PYCACHE=0`` turns this off; a ``PYTHONPYCACHEPREFIX`` already set is kept.
"""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

ENV = "HARNESS_TEST_PYCACHE"
ROOT = Path(__file__).resolve().parents[1]
COMPILED = ("harness", "tests", "examples")  # what the suite's own processes import


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "failover-harness" / "pycache"


def use_cache() -> None:
    """Write and read bytecode in :func:`cache_dir` in this process and the ones it starts,
    if the environment forbids writing it beside the sources (else nothing changes)."""
    if os.environ.get(ENV) == "0" or not sys.dont_write_bytecode or sys.pycache_prefix:
        return
    prefix = cache_dir()
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a read-only home: compile as before
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def compile_sources() -> None:
    """Compile the checkout's Python once, before the workers and services start, so that none
    of them compiles it again (a no-op for what is already up to date; only with the cache)."""
    if sys.pycache_prefix != str(cache_dir()):
        return
    for folder in COMPILED:
        compileall.compile_dir(ROOT / folder, quiet=2, workers=1)
