"""What to do about a broken ``schema.json``: the path in the words other files use, and a fix.

``jsonschema`` says what is wrong ("'numbr' is not valid under any of the given schemas"); these
helpers say where (``properties.confidence.type``, like a YAML file's field) and what to write
instead (the JSON Schema types, the kind of value a keyword takes, a valid regular expression).
Pure: no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from jsonschema.exceptions import SchemaError

TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_KIND = {
    "array": "a list, e.g. [\"a\", \"b\"]",
    "boolean": "true or false",
    "integer": "a whole number",
    "null": "null",
    "number": "a number",
    "object": "an object, e.g. {\"type\": \"string\"}",
    "string": "a string",
}
SPEC = "https://json-schema.org/draft/2020-12/json-schema-validation"


def dotted(path: Sequence[str | int]) -> str:
    """``["properties", "tags", 0]`` → ``properties.tags[0]`` (as YAML fields are named)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def schema_fix(exc: SchemaError) -> str:
    """A fix for a Draft 2020-12 meta-schema error: what the keyword takes."""
    path = list(exc.path)
    keyword = str(path[-1]) if path and isinstance(path[-1], str) else ""
    value = exc.instance
    if keyword == "type" and exc.validator in ("anyOf", "enum"):
        wrong = [v for v in (value if isinstance(value, list) else [value]) if v not in TYPES]
        guess = difflib.get_close_matches(str(wrong[0]), TYPES, n=1) if wrong else []
        hint = f" — did you mean {guess[0]!r}?" if guess else ""
        return (f'"type" takes one of {", ".join(TYPES)}, or a list of them{hint}')
    if exc.validator == "type":
        wanted = exc.validator_value if isinstance(exc.validator_value, list) else [
            exc.validator_value]
        kinds = " or ".join(_KIND.get(str(w), str(w)) for w in wanted)
        return f'"{keyword}" takes {kinds}' if keyword else f"write {kinds}"
    if exc.validator == "format" and exc.validator_value == "regex":
        try:
            re.compile(str(value))
            why = ""
        except re.error as error:
            why = f" ({error})"
        return (f'"{keyword}" must be a valid regular expression{why}: escape a literal '
                "[ ( { or \\ with a backslash")
    if exc.validator == "minimum":
        return f'"{keyword}" must be at least {exc.validator_value}'
    if exc.validator == "uniqueItems":
        return f'list each value of "{keyword}" once'
    if exc.validator == "minItems":
        return f'"{keyword}" needs at least {exc.validator_value} item(s)'
    return (f'correct "{keyword or "the schema"}" ({exc.validator}: '
            f"{_short(exc.validator_value)}); see {SPEC}")


# What to write for each ``json.JSONDecodeError`` message (by its start), in the order tried.
_JSON_FIXES = (
    ("Expecting property name", 'write the key in double quotes: "key": value'),
    ("Expecting ',' delimiter",
     "add the missing comma between the two values (or close the bracket before it)"),
    ("Expecting ':' delimiter", 'write a colon after the key: "key": value'),
    ("Expecting value", "write a value here: a string in double quotes, a number, true, false, "
                        "null, an object or a list"),
    ("Extra data", "remove what follows the schema's closing brace: one JSON object per file"),
    ("Unterminated string", 'close the string with a double quote (")'),
    ("Invalid control character", "write a newline or tab inside a string as \\n or \\t"),
    ("Invalid \\escape", "escape a backslash as \\\\ (in a pattern: \"\\\\d\" for \\d)"),
)


def json_fix(message: str, text: str, pos: int) -> str:
    """A fix for a ``json.JSONDecodeError`` (its ``msg``) at ``pos`` of ``text``."""
    before, after = text[:pos].rstrip(), text[pos:pos + 1]
    if before.endswith(",") and after in ("}", "]") and message.startswith(
            ("Expecting property name", "Expecting value")):
        return "remove the comma before this point: JSON allows no trailing comma"
    return next((fix for start, fix in _JSON_FIXES if message.startswith(start)),
                "correct the JSON at this point")


def json_path_at(text: str, pos: int) -> str:
    """The dotted path of the value being written at ``pos`` of a (broken) JSON ``text``:
    a light scan of what precedes it (strings, brackets, keys and commas), never a parse."""
    stack: list[list[Any]] = []  # [kind "{" or "[", the current key or index]
    key: str | None = None
    i = 0
    while i < min(pos, len(text)):
        char = text[i]
        if char == '"':
            end = i + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            key = text[i + 1:end]
            i = end + 1
            continue
        if char in "{[":
            stack.append([char, None if char == "{" else 0])
        elif char in "}]" and stack:
            stack.pop()
        elif char == ":" and stack and stack[-1][0] == "{":
            stack[-1][1] = key
        elif char == "," and stack:
            if stack[-1][0] == "[":
                stack[-1][1] += 1
            else:
                stack[-1][1] = None
        i += 1
    return dotted([part for _, part in stack if part is not None])


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

