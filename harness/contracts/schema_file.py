"""A contract's output schema file: JSON, finite numbers, Draft 2020-12, an object.

Every error names schema.json, its line and field, and the fix.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from harness.contracts.jsonpos import json_lines, line_of
from harness.contracts.schema_errors import dotted, json_fix, json_path_at, schema_fix
from harness.domain.errors import ConfigError
from harness.yamlsrc import YamlSource


class _NotFinite(ValueError):
    """A number JSON Schema and RFC 8785 cannot carry (1e999, NaN, Infinity)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _not_finite(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def load_schema(src: YamlSource, path: Path) -> dict[str, Any]:
    """Read and check the output schema; every error names its line in schema.json."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise src.error(
            f"schema file {path} not found", ("output", "schema"),
            fix="put the JSON Schema beside contract.yaml or fix the path",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the schema: {exc}", file=str(path),
                          fix="save it as UTF-8 JSON") from None
    try:
        schema = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except _NotFinite as exc:
        lines = json_lines(text)
        at = text.find(exc.text)
        where = json_path_at(text, at) if at >= 0 else ""
        raise ConfigError(
            f"{exc.text} is not a finite number (JSON Schema, and the contract hash's RFC 8785 "
            "JSON, have no infinity or NaN)", file=str(path),
            line=text.count("\n", 0, at) + 1 if at >= 0 else None, field=where or None,
            fix="write a finite number (e.g. 1e308), or leave the bound out",
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=str(path),
                          line=exc.lineno, field=json_path_at(text, exc.pos) or None,
                          fix=json_fix(exc.msg, text, exc.pos)) from None
    except RecursionError:
        raise ConfigError("the JSON nests too deeply to parse", file=str(path),
                          fix="flatten the schema (use $defs and $ref)") from None
    lines = json_lines(text)

    def error(message: str, where: list[str | int], fix: str) -> ConfigError:
        return ConfigError(
            message, file=str(path), line=line_of(lines, where),
            field=dotted(where) or "(root)", fix=fix,
        )

    if not isinstance(schema, dict):
        raise error("a JSON Schema must be an object", [],
                    'write an object: {"type": "object", "properties": {…}}')
    declared = schema.get("$schema")
    if declared and "2020-12" not in str(declared):
        raise error(
            f"$schema is {declared!r}; contracts use Draft 2020-12", ["$schema"],
            'set "$schema": "https://json-schema.org/draft/2020-12/schema"',
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise error(
            f"not a valid Draft 2020-12 schema: {exc.message}", list(exc.path),
            schema_fix(exc),
        ) from None
    if schema.get("type") != "object":
        raise error("the output must be a JSON object", ["type"] if "type" in schema else [],
                    'set "type": "object"')
    return schema
