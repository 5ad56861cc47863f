"""tests/_bytecode.py: the controller writes a checkout's bytecode once (ordinary and pytest's
rewritten), so that the workers and the processes only read it; a second pass writes nothing."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest

from tests import _bytecode


def _checkout(root: Path) -> None:
    (root / "harness").mkdir(parents=True)
    (root / "harness" / "__init__.py").write_text("", "utf-8")
    (root / "harness" / "thing.py").write_text("def f():\n    assert 1 + 1 == 2\n", "utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text("", "utf-8")
    (root / "tests" / "helper.py").write_text("X = 1\n", "utf-8")  # not a test: not rewritten
    (root / "tests" / "test_thing.py").write_text("def test_f():\n    assert 2\n", "utf-8")
    (root / "tests" / "test_broken.py").write_text("def (:\n", "utf-8")  # the worker says so


def _pycs(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.pyc")}


def test_the_checkout_is_compiled_and_rewritten_once(tmp_path: Path,
                                                      request: pytest.FixtureRequest) -> None:
    if sys.pycache_prefix:
        pytest.skip("PYTHONPYCACHEPREFIX is set: bytecode lives elsewhere")
    _checkout(tmp_path)
    assert _bytecode.compile_checkout(request.config, tmp_path) == 4  # 2 harness, 2 tests
    written = _pycs(tmp_path)
    tag = sys.implementation.cache_tag
    for module in ("harness/thing.py", "tests/helper.py", "tests/test_thing.py"):
        assert Path(importlib.util.cache_from_source(str(tmp_path / module))).relative_to(
            tmp_path).as_posix() in written, module
    rewritten = {p for p in written if "-pytest-" in p}
    assert rewritten == {f"harness/__pycache__/__init__.{tag}-pytest-{pytest.__version__}.pyc",
                         f"harness/__pycache__/thing.{tag}-pytest-{pytest.__version__}.pyc",
                         f"tests/__pycache__/conftest.{tag}-pytest-{pytest.__version__}.pyc",
                         f"tests/__pycache__/test_thing.{tag}-pytest-{pytest.__version__}.pyc"}
    assert _bytecode.compile_checkout(request.config, tmp_path) == 0
    assert _pycs(tmp_path) == written  # up to date: nothing written again
    (tmp_path / "tests" / "test_thing.py").write_text("def test_f():\n    assert 3\n", "utf-8")
    assert _bytecode.compile_checkout(request.config, tmp_path) == 1  # the changed one only


def test_the_installed_plugins_packages_are_rewritten_once(
        tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin's package (every module of it) and a plugin module outside the checkout get
    pytest's rewritten bytecode, which the workers then read instead of rewriting; the
    checkout's own (harness) is left to compile_checkout; a second pass writes nothing."""
    if sys.pycache_prefix:
        pytest.skip("PYTHONPYCACHEPREFIX is set: bytecode lives elsewhere")
    site = tmp_path / "site"
    (site / "fakeplug" / "sub").mkdir(parents=True)
    (site / "fakeplug" / "__init__.py").write_text("", "utf-8")
    (site / "fakeplug" / "sub" / "__init__.py").write_text("", "utf-8")
    (site / "fakeplug" / "sub" / "deep.py").write_text("def f(x):\n    assert x == 1\n", "utf-8")
    (site / "fakemod.py").write_text("def g(y):\n    assert y\n", "utf-8")
    (site / "fakeplug" / "template.py").write_text("def (:\n", "utf-8")  # never imported
    monkeypatch.syspath_prepend(str(site))
    names = {"fakeplug", "fakemod", "no_such_module_anywhere", "harness"}
    assert _bytecode.rewrite_plugins(request.config, names=names) == 4
    tail = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"
    written = _pycs(site)
    assert set(written) == {f"fakeplug/__pycache__/__init__.{tail}",
                            f"fakeplug/sub/__pycache__/__init__.{tail}",
                            f"fakeplug/sub/__pycache__/deep.{tail}", f"__pycache__/fakemod.{tail}"}
    from _pytest.assertion import rewrite  # what a worker does with it: reads, rewritten
    deep = site / "fakeplug" / "sub" / "deep.py"
    code = rewrite._read_pyc(deep, site / "fakeplug" / "sub" / "__pycache__" / f"deep.{tail}")
    assert code is not None
    [f] = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    assert any(name.startswith("@py_assert") for name in f.co_varnames)  # rewritten
    assert _bytecode.rewrite_plugins(request.config, names=names) == 0
    assert _pycs(site) == written


def test_prepare_shares_the_work_with_a_forked_child_and_leaves_nothing_undone(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Two processes, every other module each: afterwards every module's bytecode (ordinary and
    rewritten) is there, written once; a Node package's Python is left alone; this process
    comes back alone (the child never returns into the test run)."""
    if sys.pycache_prefix:
        pytest.skip("PYTHONPYCACHEPREFIX is set: bytecode lives elsewhere")
    _checkout(tmp_path)
    for n in range(6):
        (tmp_path / "harness" / f"m{n}.py").write_text(f"def f():\n    assert {n} >= 0\n", "utf-8")
    node = tmp_path / "tests" / "node" / "node_modules" / "gyp"
    node.mkdir(parents=True)
    (node / "gyp.py").write_text("X = 1\n", "utf-8")
    pid = os.getpid()
    _bytecode.prepare(request.config, tmp_path)
    assert os.getpid() == pid
    written = _pycs(tmp_path)
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    for n in range(6):
        assert f"harness/__pycache__/m{n}.{sys.implementation.cache_tag}.pyc" in written
        assert f"harness/__pycache__/m{n}.{tag}.pyc" in written
    assert f"tests/__pycache__/test_thing.{tag}.pyc" in written
    assert not any("node_modules" in p for p in written)
    assert _bytecode.compile_checkout(request.config, tmp_path) == 0  # nothing left undone
    assert _pycs(tmp_path) == written
