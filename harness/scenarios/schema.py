"""The scenario file's JSON Schema, and its errors turned into what to write instead.

:func:`explain` picks the most specific error of a validation (the deepest; an unknown field,
often a typo, before "no action") and names the file, line and field, with a fix drawn from the
schema's ``x-example`` values and the close matches of a misspelt name.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from harness.domain.errors import ConfigError
from harness.yamlsrc import YamlSource

ACTION_KEYS = ("create", "read", "attempt", "cancel", "crash", "attempts", "races", "fault")


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema every scenario file must satisfy (shipped as package data)."""
    text = resources.files("harness.scenarios").joinpath("scenario.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def validator() -> Draft202012Validator:
    return Draft202012Validator(scenario_schema())


def first_error(src: YamlSource) -> ConfigError | None:
    """The most specific schema error of ``src``'s data, explained; ``None`` when it is valid."""
    errors = sorted(validator().iter_errors(src.data), key=_error_rank)
    return _explain(src, errors[0]) if errors else None


# -- schema errors into what to write ------------------------------------------------------------
def _leaf(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf, the error of the branch that matches the instance's type best."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        typed = [e for e in error.context if e.validator != "type"]
        pool = typed or list(error.context)
        return _leaf(max(pool, key=lambda e: len(e.absolute_path)))
    return error


def _error_rank(error: ValidationError) -> tuple[int, int]:
    # The deepest error is the most specific; at equal depth an unknown field (often a typo
    # of the right one) explains more than "no action" does.
    return (-len(_leaf(error).absolute_path), 0 if error.validator == "additionalProperties" else 1)


def _example(schema: Any) -> str | None:
    if isinstance(schema, dict):
        if "x-example" in schema:
            return str(schema["x-example"])
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _example(scenario_schema()["$defs"][ref.split("/")[-1]])
    return None


def _explain(src: YamlSource, top: ValidationError) -> ConfigError:
    if top.validator == "oneOf" and isinstance(top.instance, dict) and "create" in str(top.schema):
        present = [k for k in ACTION_KEYS if k in top.instance]
        what = "no action" if not present else f"{len(present)} actions ({', '.join(present)})"
        return src.error(
            f"this step has {what}", tuple(top.absolute_path),
            fix="write exactly one of create, read, attempt, cancel, crash, attempts, races, "
            "fault; "
            "e.g. {at: 0, create: {key: click-1, intent: triage}, save: job}",
        )
    error = _leaf(top)
    loc = tuple(error.absolute_path)
    example = _example(error.schema)
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extras = [k for k in error.instance if k not in allowed]
        key = extras[0] if extras else "?"
        close = difflib.get_close_matches(str(key), allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        if not allowed:
            fix = f"remove '{key}'"
        else:
            fix = f"{hint}remove '{key}' or use one of: {', '.join(allowed)}"
        return src.error(f"unknown field '{key}'", (*loc, key), fix=fix)
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else "?"
        sub = error.schema.get("properties", {}).get(missing, {})
        return src.error(
            f"field '{missing}' is missing", loc,
            fix=f"add {_example(sub) or missing + ': …'}",
        )
    if kind == "enum":
        options = ", ".join(str(o) for o in error.validator_value)
        close = difflib.get_close_matches(str(error.instance), [str(o) for o in
                                                                error.validator_value], n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return src.error(
            f"{error.instance!r} is not allowed here", loc, fix=f"{hint}write one of: {options}"
        )
    if kind == "type":
        wanted = error.validator_value
        return src.error(
            f"{_show(error.instance)} is not a {wanted}", loc,
            fix=f"write {example}" if example else f"write a {wanted} here",
        )
    if kind in ("minimum", "maximum", "exclusiveMinimum", "minItems", "minLength", "pattern",
                "uniqueItems", "maxLength", "propertyNames"):
        return src.error(
            f"{_show(error.instance)}: {error.message}", loc,
            fix=f"write {example}" if example else "fix the value",
        )
    return src.error(error.message, loc, fix=f"write {example}" if example else "see docs")


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
