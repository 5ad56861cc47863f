"""What the fake providers answer: the default answer, answers files, and the content mutations.

An *answer function* ``(system: str | None, user: str, schema: dict) -> dict`` decides the
conformant JSON answer. The default, :func:`minimal_answer`, is a deterministic minimal instance
of the schema. The content behaviours (``hallucinated-key``, ``wrong-types``, ``fenced-json``,
``prose``) are mutations of that answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.domain.errors import ConfigError
from harness.yamlsrc import compose_checked, read_config_text

AnswerFn = Callable[[str | None, str, dict[str, Any]], dict[str, Any]]

_FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def minimal_instance(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small deterministic value that meets ``schema`` (common keywords; local ``$ref``)."""
    if not isinstance(schema, dict) or depth > 32:
        return None
    root = schema if root is None else root
    if "$ref" in schema:
        return minimal_instance(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key]
                       if not (isinstance(o, dict) and o.get("type") == "null")]
            return minimal_instance((options or schema[key])[0], root, depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            if isinstance(part, dict) and "$ref" in part:
                part = _resolve(part["$ref"], root)
            for k, v in (part or {}).items():
                if k == "properties":
                    merged.setdefault("properties", {}).update(v)
                elif k == "required":
                    merged.setdefault("required", []).extend(v)
                else:
                    merged.setdefault(k, v)
        return minimal_instance(merged, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((t for t in kind if t != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else ("array" if "items" in schema else None)
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal_instance(props.get(name, {}), root, depth + 1)
                for name in schema.get("required", [])}
    if kind == "array":
        prefix = schema.get("prefixItems", [])
        count = max(schema.get("minItems", 0), len(prefix))
        items = [minimal_instance(p, root, depth + 1) for p in prefix]
        items += [minimal_instance(schema.get("items", {}), root, depth + 1)
                  for _ in range(count - len(items))]
        return items
    if kind == "string":
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]]
        return "a" * max(schema.get("minLength", 1), 1)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return {}


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    low = schema.get("minimum")
    if low is None and "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"] + (1 if integer else 0.5)
    high = schema.get("maximum")
    if high is None and "exclusiveMaximum" in schema:
        high = schema["exclusiveMaximum"] - (1 if integer else 0.5)
    value: int | float = 0
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    return int(value) if integer else value


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return {}
    node: Any = root
    for part in ref[2:].split("/"):
        name = part.replace("~1", "/").replace("~0", "~")
        node = node.get(name, {}) if isinstance(node, dict) else {}
    return node


def minimal_answer(system: str | None, user: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The default answer function: a minimal instance of ``schema`` (an object)."""
    value = minimal_instance(schema)
    return value if isinstance(value, dict) else {"value": value}


# -- content mutations ------------------------------------------------------------------------

def with_hallucinated_key(answer: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The answer plus a top-level key that the schema does not name."""
    names = set(schema.get("properties", {})) | set(answer)
    extra = next(n for n in ("confidence", "notes", "_extra", "_extra_2") if n not in names)
    return {**answer, extra: 0.97 if extra == "confidence" else "added by the model"}


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 12345
    if isinstance(value, list):
        return {"items": value}
    if isinstance(value, dict):
        return [value]
    return "none"


def with_wrong_types(answer: dict[str, Any]) -> dict[str, Any]:
    """Every top-level value replaced by a value of another JSON type (an empty answer gets one)."""
    if not answer:
        return {"value": "not-an-object-field"}
    return {key: _other_type(value) for key, value in answer.items()}


def fenced(answer: dict[str, Any]) -> str:
    """The answer inside a Markdown ```json fence, as chat models like to write it."""
    return "```json\n" + json.dumps(answer, indent=2, ensure_ascii=False) + "\n```"


def prose(answer: dict[str, Any]) -> str:
    """A sentence about the answer with no JSON in it."""
    parts = ", ".join(f"{k} is {v}" for k, v in answer.items()) or "there is nothing to report"
    return f"Sure! Here is what I found: {parts}. Let me know if you need anything else."


# -- answers files ------------------------------------------------------------------------------

def load_answers(path: str | Path) -> AnswerFn:
    """An answer function from a YAML/JSON file::

        answers:
          - user: "Extract the invoice: ACME, 12 EUR"    # exact user message
            system: "You extract invoices."               # optional: also match the system prompt
            answer: {vendor: ACME, total: 12}             #   (system: null = no system prompt)
        default: {vendor: unknown, total: 0}              # optional; else a minimal instance
    """
    name = str(path)
    try:  # bounded like every config file: control bytes, depth, aliases (harness.yamlsrc)
        text = read_config_text(Path(path))
        data = compose_checked(text, name)[1] if text.strip() else None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the answers file: {exc}", file=name,
                          fix="pass a YAML or JSON file with `answers: [{user, answer}]`") from None
    if not isinstance(data, dict) or not isinstance(data.get("answers", []), list):
        raise ConfigError("expected a mapping with `answers:` (a list)", file=name, field="answers",
                          fix="write answers: [{user: <message>, answer: {…}}]")
    entries = data.get("answers", [])
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "user" not in entry or not isinstance(
                entry.get("answer"), dict):
            raise ConfigError("each entry needs `user` (a string) and `answer` (an object)",
                              file=name, field=f"answers[{i}]",
                              fix="write {user: <message>, answer: {…}}")
    default = data.get("default")

    def answer(system: str | None, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        for entry in entries:
            if entry["user"] == user and ("system" not in entry or entry["system"] == system):
                return dict(entry["answer"])
        return dict(default) if isinstance(default, dict) else minimal_answer(system, user, schema)

    return answer
