"""The README's explore example runs on `pip install 'failover-harness[explore]'`: every
third-party module the Redis example services import (with the example modules they import) is
installed by the [explore] extra's closure, as the installed metadata resolves it."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path
from typing import Any

import pytest

from tests._imported import Imported

# packaging's requirement parser: imported by the worker that runs these tests
packaging_requirements: Any = Imported("packaging.requirements")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def imported(script: Path, seen: set[Path] | None = None) -> set[str]:
    """The top-level modules ``script`` imports, following the examples' own modules."""
    seen = seen if seen is not None else set()
    seen.add(script)
    found: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text("utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [])
        for name in names:
            top = name.split(".")[0]
            local = EXAMPLES / f"{top}.py"
            if local.exists():
                if local not in seen:
                    found |= imported(local, seen)
            elif top and top not in sys.stdlib_module_names and top != "__future__":
                found.add(top)
    return found


def closure(extra: str) -> set[str]:
    """The distributions ``pip install 'failover-harness[extra]'`` installs (normalised)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    todo = [packaging_requirements.Requirement(r) for r in project["dependencies"]]
    todo += [packaging_requirements.Requirement(r) for r in project["optional-dependencies"][extra]]
    names: set[str] = set()
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name == "failover-harness":
            todo += [packaging_requirements.Requirement(r) for x in req.extras
                     for r in project["optional-dependencies"][x]]
            continue
        if name in names:
            continue
        names.add(name)
        try:
            deps = requires(req.name) or []
        except PackageNotFoundError:
            continue
        for dep in map(packaging_requirements.Requirement, deps):
            envs = [{"extra": x} for x in ("", *req.extras)]
            if dep.marker is None or any(dep.marker.evaluate(e) for e in envs):
                todo.append(dep)
    return names


@pytest.mark.parametrize("script", ["redis_lock_service.py", "redis_two_writes_service.py"])
def test_the_redis_examples_need_nothing_beyond_the_explore_extra(script: str) -> None:
    installed = closure("explore")
    providers = packages_distributions()
    for module in imported(EXAMPLES / script):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        assert dists & installed, f"{script} imports {module!r}; [explore] does not install it"
