"""One error hierarchy in fact: every public exception of the package is in the tree that the
docstring of ``harness.domain.errors`` draws, under its real parent, or in its list of the
exceptions kept outside on purpose (each with its reason)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import harness
from harness.domain import errors
from harness.domain.errors import HarnessError

_TREE_LINE = re.compile(r"^    (?P<prefix>(?:│   |    )*)(?:├── |└── )?(?P<name>[A-Z]\w+)\b")


def public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a harness module under a public name."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(harness.__path__, "harness."):
        module = importlib.import_module(module_info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__ and not name.startswith("_")):
                assert name not in found, f"two exception classes are called {name}"
                found[name] = obj
    return found


def documented_tree() -> dict[str, str | None]:
    """name → parent name, from the drawing in the module docstring."""
    doc = errors.__doc__ or ""
    drawing = doc.split("::", 1)[1].split("Outside the hierarchy", 1)[0]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in drawing.splitlines():
        match = _TREE_LINE.match(line)
        if not match:
            continue
        depth = len(match.group("prefix")) // 4 + (0 if line.lstrip().startswith("Harness") else 1)
        del stack[depth:]
        parents[match.group("name")] = stack[-1] if stack else None
        stack.append(match.group("name"))
    return parents


def documented_outside() -> set[str]:
    section = (errors.__doc__ or "").split("Outside the hierarchy", 1)[1]
    return set(re.findall(r"^    ([A-Z]\w+)\s{2,}", section, re.MULTILINE))


def test_every_public_exception_is_in_the_tree_or_kept_outside_on_purpose() -> None:
    found = public_exceptions()
    tree, outside = documented_tree(), documented_outside()
    inside = {n for n, cls in found.items() if issubclass(cls, HarnessError)}
    assert inside == set(tree), (
        f"draw these in harness/domain/errors.py: {sorted(inside - set(tree))}; "
        f"no longer exist: {sorted(set(tree) - inside)}")
    assert set(found) - inside == outside, (
        f"derive from HarnessError, or list as outside on purpose (with the reason): "
        f"{sorted(set(found) - inside - outside)}; listed but not found: "
        f"{sorted(outside - (set(found) - inside))}")


def test_each_class_sits_under_its_real_parent() -> None:
    found = public_exceptions()
    for name, parent in documented_tree().items():
        cls = found[name]
        if parent is None:
            assert cls is HarnessError
            continue
        direct = [b.__name__ for b in cls.__bases__ if issubclass(b, HarnessError)]
        assert direct == [parent], f"{name} derives from {direct}, the tree says {parent}"


def test_each_error_has_a_default_message_and_a_code() -> None:
    for name, cls in public_exceptions().items():
        if issubclass(cls, HarnessError):
            assert (cls.__doc__ or "").strip(), f"{name} needs a one-line docstring"
            assert cls.code and isinstance(cls.http_status, int), name
