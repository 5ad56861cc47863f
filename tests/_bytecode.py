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

pytest rewrites the installed plugins' packages too (hypothesis, schemathesis, anyio, …: every
distribution that registers a pytest plugin, enabled or not), and their cache is never written
either: ``rewrite_plugins`` writes it once into their ``__pycache__`` (the venv's; a cache again),
for the workers and for every pytest run a test starts (tests/plugin/, tests/acceptance/).

All of it is serial work before the first test (24 s of CPU on a slow 2-core machine, for a
fresh clone and a fresh venv): ``prepare`` shares it with a forked child, each process taking
every other module, so both cores do it.
"""

from __future__ import annotations

import compileall
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPILED = ("harness", "tests", "examples")  # what the suite's own processes import
REWRITTEN = ("harness", "tests")  # what pytest rewrites in a worker
Share = tuple[int, int]  # (this process's index, how many share the work): every count-th module
ALL: Share = (0, 1)


def prepare(config: pytest.Config, root: Path = ROOT) -> None:
    """``compile_checkout`` and ``rewrite_plugins``, in this process and a forked child (where
    ``os.fork`` exists), each taking every other module; back once both are done. A cache
    only: a child that fails leaves its modules to the workers, which compile them as before."""
    child = os.fork() if hasattr(os, "fork") else None
    share = ALL if child is None else (0 if child else 1, 2)
    try:
        compile_checkout(config, root, share=share)
        rewrite_plugins(config, root, share=share)
    except BaseException:
        if child == 0:
            os._exit(1)
        raise
    if child == 0:
        os._exit(0)  # nothing of the parent's (atexit, buffered output) runs twice
    if child:
        os.waitpid(child, 0)


def compile_checkout(config: pytest.Config, root: Path = ROOT, *, share: Share = ALL) -> int:
    """Compile and rewrite ``root``'s Python where its bytecode is missing or stale (``share``:
    this process's part of the modules); the number of modules rewritten."""
    index, count = share
    for path in _compiled_sources(root)[index::count]:
        compileall.compile_file(path, quiet=2)
    return _write_rewritten(config, _rewritten_sources(root)[index::count], by_mtime=False)


def rewrite_plugins(config: pytest.Config, root: Path = ROOT,
                    names: set[str] | None = None, *, share: Share = ALL) -> int:
    """Write pytest's rewritten bytecode for the installed plugins' packages (outside
    ``root``); the number of modules rewritten.

    pytest rewrites the assertions of every module of a distribution that registers a pytest
    plugin (hypothesis, schemathesis, anyio, pytest-xdist, …), in every process that imports
    one, whether or not that plugin is enabled, and caches the result beside the module, in
    its ``__pycache__``. Where ``PYTHONDONTWRITEBYTECODE`` is set it never writes that cache,
    so each xdist worker and each pytest run a test starts rewrote about 240 of them again:
    3-5 CPU-s a process. The controller writes it once here, before the workers start;
    where the folder is not writable (a system site-packages) nothing is written and the
    workers rewrite, as pytest does. A cache only: the code is what pytest would run.
    ``names``: the top-level modules to write for (default: those pytest marked); ``share``:
    this process's part of them."""
    if names is None:
        hook = config.pluginmanager.rewrite_hook
        names = set(getattr(hook, "_must_rewrite", ()))  # pytest's private API (pytest 8-9)
    index, count = share
    return _write_rewritten(config, _plugin_sources(names, root)[index::count], by_mtime=True)


def _write_rewritten(config: pytest.Config, sources: list[Path], by_mtime: bool) -> int:
    """Rewrite each of ``sources`` whose cached rewritten bytecode is missing or stale and
    write it where pytest reads it; the number written. ``by_mtime``: a cache newer than its
    source is taken as up to date unread (an installed package changes only when installed
    again; a stale one the workers find by its hash, and rewrite, as pytest does)."""
    try:  # pytest's private API (pytest 8-9): without it the workers rewrite for themselves
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        tail, cache_dir, read, make = (rewrite.PYC_TAIL, rewrite.get_cache_dir,
                                       rewrite._read_pyc, rewrite._rewrite_test)
        write, makedirs = rewrite._write_pyc, rewrite.try_makedirs
    except (ImportError, AttributeError, KeyError):
        return 0
    done = 0
    for source in sources:
        pyc = cache_dir(source) / (source.name[:-3] + tail)
        if (by_mtime and _newer(pyc, source)) or read(source, pyc) is not None:
            continue
        try:
            source_hash, code = make(source, config)
        except SyntaxError:  # the worker reports it where the module is collected, if ever
            continue
        if not makedirs(pyc.parent) or not write(state, code, source_hash, pyc):
            return done  # not writable: nor, most likely, is the rest
        done += 1
    return done


def _newer(pyc: Path, source: Path) -> bool:
    """Whether ``pyc`` was written after ``source`` changed: worth reading (an installed
    package's modules change only when it is installed again)."""
    try:
        return pyc.stat().st_mtime_ns >= source.stat().st_mtime_ns
    except OSError:
        return False


def _plugin_sources(names: set[str], root: Path) -> list[Path]:
    """The ``.py`` files of the marked top-level modules and packages, but for ``root``'s own
    (``_rewrite`` writes those)."""
    found: list[Path] = []
    for name in sorted(n for n in names if "." not in n):
        try:
            spec = importlib.util.find_spec(name)  # finds, imports nothing
        except (ImportError, ValueError):
            continue
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        origin = Path(spec.origin)
        if any(origin.is_relative_to(root / folder) for folder in REWRITTEN):
            continue  # _rewrite's
        found.extend(sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py"
                     else [origin])
    return found


def _compiled_sources(root: Path) -> list[Path]:
    """The ``.py`` files the suite's own processes import (not a Node package's helpers)."""
    found: list[Path] = []
    for folder in COMPILED:
        for where, dirs, files in os.walk(root / folder):
            dirs[:] = sorted(d for d in dirs if d not in ("node_modules", "__pycache__"))
            found.extend(Path(where, name) for name in sorted(files) if name.endswith(".py"))
    return found


def _rewritten_sources(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder in REWRITTEN:
        for path in sorted((root / folder).rglob("*.py")):
            if folder == "harness" or path.name == "conftest.py" \
                    or path.name.startswith("test_"):
                found.append(path)
    return found
