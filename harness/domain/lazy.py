"""Lazy re-exports for a package's ``__init__``: a public name is imported from its submodule on
first use (PEP 562), so importing the package does not import every engine behind it."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load(package: str, exports: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """``name`` from ``package``'s submodule ``exports[name]``, kept in ``namespace`` (the
    package's globals) so the next lookup is an ordinary attribute."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{module}"), name)
    namespace[name] = value
    return value


def names(exports: Mapping[str, str], namespace: Mapping[str, Any]) -> list[str]:
    """What ``dir(package)`` lists: what is loaded and what can be."""
    return sorted([*namespace, *exports])
