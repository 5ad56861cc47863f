"""A module imported when a test first uses it, not when its test file is collected: every
pytest-xdist worker collects every file, so a heavy import only some tests need (the SDKs, a
web framework) would otherwise cost each worker its CPU before the first test."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Imported:
    """``Imported("openai").OpenAI`` imports ``openai`` on that first attribute read."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_") or attr == "pytestmark":  # pytest's look at a module's names
            raise AttributeError(attr)
        module: ModuleType = importlib.import_module(self.name)
        return getattr(module, attr)
