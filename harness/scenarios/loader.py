"""Load scenario YAML files: JSON Schema validation, then the cross-references, into a Scenario.

Every problem is a :class:`ConfigError` naming the file, the line, the field and what to write
instead (the CLI turns it into exit 2): :mod:`harness.scenarios.schema` explains a schema error,
:mod:`harness.scenarios.builder` checks the cross-references and builds the model.
"""

from __future__ import annotations

from pathlib import Path

from harness.domain.errors import ConfigError
from harness.scenarios.builder import Builder
from harness.scenarios.model import Scenario
from harness.scenarios.schema import first_error
from harness.yamlsrc import YamlSource, load_yaml


def scenario_files(paths: list[Path]) -> list[Path]:
    """The scenario files named by ``paths`` (folders contribute their ``*.yaml``), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(
                "no such file or folder", file=str(path),
                fix="pass scenario files or a folder of them (default: scenarios/)",
            )
    if not found:
        raise ConfigError(
            "no scenario files found", file=", ".join(str(p) for p in paths),
            fix="put <name>.yaml scenario files there (see docs/scenarios.md)",
        )
    return found


def load_scenario(path: Path) -> Scenario:
    """Read, validate and build the scenario in ``path``."""
    return scenario_from_source(load_yaml(path))


def scenario_from_source(src: YamlSource) -> Scenario:
    if not isinstance(src.data, dict):
        raise src.error(
            "a scenario must be a YAML mapping", fix="start with name:, steps: and checkers:"
        )
    error = first_error(src)
    if error is not None:
        raise error
    return Builder(src).build()
