"""The contracts package's public surface is exactly what it exports."""

from __future__ import annotations

import harness.commands.certify as certify_command
import harness.contracts as contracts
from harness.contracts.certifier import DEFAULT_CONCURRENCY


def test_exported_members() -> None:
    public = {name for name in dir(contracts) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(contracts, name)).__name__ == "module"}
    assert set(contracts.__all__) == public - modules
    assert contracts.__all__ == sorted(contracts.__all__)


def test_the_command_default_matches_the_certifier() -> None:
    assert certify_command.DEFAULT_CONCURRENCY == DEFAULT_CONCURRENCY
