"""The checkout's bytecode, made once by the controller before the xdist workers start.

Every worker collects the same test modules at the same moment, and pytest rewrites the
assertions of each (and of every ``harness`` module: the package ships a pytest plugin, and pytest
rewrites a plugin's whole package): 2-3 CPU-s of each worker's collection, six times over. Every
CLI or service process the suite starts compiles the harness modules it imports. Where the
environment sets ``PYTHONDONTWRITEBYTECODE`` (some CI images and containers do) none of that is
ever cached, so it is paid in every process of every run.

So the controller writes both once, into the checkout's ``__pycache__`` folders (caches, which a
run may leave; nothing else is written): ordinary bytecode for ``harness/``, ``tests/`` and
``examples/`` (``compileall``, a no-op for what is up to date), and pytest's rewritten bytecode
for the test modules, conftests and ``harness/``. The workers and the processes then only read
it; Python reads bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says. pytest's rewriting has no
public API: if its private functions change, the rewritten half is skipped (the workers rewrite,
as before) and the suite runs as it would without this module.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPILED = ("harness", "tests", "examples")  # what the suite's own processes import
REWRITTEN = ("harness", "tests")  # what pytest rewrites in a worker


def compile_checkout(config: pytest.Config, root: Path = ROOT) -> int:
    """Compile and rewrite ``root``'s Python where its bytecode is missing or stale; the number
    of modules rewritten."""
    for folder in COMPILED:
        if (root / folder).is_dir():
            compileall.compile_dir(root / folder, quiet=2, workers=1)
    return _rewrite(config, root)


def _rewrite(config: pytest.Config, root: Path) -> int:
    try:  # pytest's private API (pytest 8-9): without it the workers rewrite for themselves
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        tail, cache_dir, read, make = (rewrite.PYC_TAIL, rewrite.get_cache_dir,
                                       rewrite._read_pyc, rewrite._rewrite_test)
        write, makedirs = rewrite._write_pyc, rewrite.try_makedirs
    except (ImportError, AttributeError, KeyError):
        return 0
    done = 0
    for source in _rewritten_sources(root):
        pyc = cache_dir(source) / (source.name[:-3] + tail)
        if read(source, pyc) is not None:
            continue
        try:
            source_hash, code = make(source, config)
        except SyntaxError:
            continue  # the worker reports it where the module is collected
        if makedirs(pyc.parent) and write(state, code, source_hash, pyc):
            done += 1
    return done


def _rewritten_sources(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder in REWRITTEN:
        for path in sorted((root / folder).rglob("*.py")):
            if folder == "harness" or path.name == "conftest.py" \
                    or path.name.startswith("test_"):
                found.append(path)
    return found
