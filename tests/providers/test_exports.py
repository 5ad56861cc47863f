"""harness.providers: its public surface is its sorted ``__all__``, and all of it loads."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import harness.providers as providers


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert providers.__all__ == sorted(providers.__all__)
    for name in providers.__all__:
        assert getattr(providers, name) is not None, name


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = providers.nothing_here  # type: ignore[attr-defined]


def test_config_does_not_import_the_network_stack() -> None:
    # providers.yaml is read by `gate` in CI: it must not pay for httpx and uvicorn.
    code = ("import sys, harness.providers.config; "
            "print(any(m in sys.modules for m in ('httpx', 'uvicorn')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
    assert importlib.import_module("harness.providers.config").load_providers
