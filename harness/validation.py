"""pydantic's validation errors in the user's words, for every file the harness loads
(providers.yaml, contracts, target profiles, drill files): which field, what is wrong, what is
allowed there ("did you mean …?"), and the fix — never pydantic's raw text ("Extra inputs are
not permitted"). One voice: each loader turns ``(message, location, fix)`` into its
``file:line (field): message`` / ``fix:`` error.

Pure: :func:`explain` reads the errors of one ``model_validate`` against the model's fields.
"""

from __future__ import annotations

import difflib
import re
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import ErrorDetails


class ValueFix(ValueError):
    """A field validator's refusal, with the fix to show (pydantic keeps it in the error's
    ``ctx``; :func:`explain` shows its message and its fix)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def _members(tp: Any) -> list[Any]:
    """The types a field may hold: a union's members, else the type itself."""
    if get_origin(tp) in (Union, types.UnionType):
        return [m for arg in get_args(tp) for m in _members(arg)]
    return [tp]


def _models(tp: Any) -> list[type[BaseModel]]:
    return [m for m in _members(tp) if isinstance(m, type) and issubclass(m, BaseModel)]


def _containers(tp: Any) -> list[Any]:
    """The item (list) or value (dict) types of a field that is a collection."""
    out = []
    for member in _members(tp):
        origin, args = get_origin(member), get_args(member)
        if origin is dict and len(args) == 2:
            out.append(args[1])
        elif origin is list and args:
            out.append(args[0])
    return out


def model_at(root: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model whose fields ``loc`` (a path of field names, keys and indexes) points into."""
    current: Any = root
    for part in loc:
        models = [m for m in _models(current) if isinstance(part, str) and part in m.model_fields]
        if models:
            current = models[0].model_fields[str(part)].annotation
            continue
        inner = _containers(current)
        if not inner:
            return None
        current = inner[0]  # ``part`` is a key or an index
    found = _models(current)
    return found[0] if found else None


def _tags(root: type[BaseModel]) -> set[str]:
    """Names pydantic puts in a location for a union's branch (``Answer``, ``literal['none']``)."""
    names: set[str] = set()
    todo: list[type[BaseModel]] = [root]
    while todo:
        model = todo.pop()
        if model.__name__ in names:
            continue
        names.add(model.__name__)
        for info in model.model_fields.values():
            for tp in [info.annotation, *_containers(info.annotation)]:
                todo.extend(_models(tp))
    return names


def _clean(loc: tuple[Any, ...], tags: set[str]) -> tuple[str | int, ...]:
    return tuple(p for p in loc if not (isinstance(p, str) and (
        "[" in p or p in tags or p.startswith(("constrained-", "function-")))))


def _pick(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error that describes what the user wrote: of a union's branches, the one of the
    input's kind (a string checked against a literal, a mapping against a model)."""
    def fits(error: ErrorDetails) -> bool:
        branch = next((p for p in error["loc"] if isinstance(p, str) and "literal[" in p), None)
        if branch is not None:
            return isinstance(error["input"], str)
        if error["type"] == "model_type":
            return not any("literal[" in str(p) for e in errors for p in e["loc"])
        return True

    return next((e for e in errors if fits(e)), errors[0])


def _choices(expected: str) -> list[str]:
    return re.findall(r"'([^']*)'", expected)


def _did_you_mean(word: Any, allowed: list[str]) -> str:
    close = difflib.get_close_matches(str(word), allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _shown(value: Any, show_values: bool) -> str:
    return repr(value) if show_values else "the value"


def explain(root: type[BaseModel], errors: list[ErrorDetails], *,
            docs: str = "docs/index.md", show_values: bool = True,
            ) -> tuple[str, tuple[str | int, ...], str]:
    """(message, location, fix) for the first problem pydantic found in a file validated as
    ``root``: in the user's words, with a did-you-mean where one applies, never pydantic's raw
    text. ``docs`` is the page the fix for a missing field points at; ``show_values=False`` for
    a file that may hold a secret (the value is then not repeated)."""
    error = _pick(errors)
    loc = _clean(error["loc"], _tags(root))
    kind, value = error["type"], error.get("input")
    shown = _shown(value, show_values)
    if kind == "extra_forbidden":
        field = loc[-1] if loc else "?"
        model = model_at(root, loc[:-1])
        allowed = [n for n, f in model.model_fields.items() if not f.exclude] \
            if model is not None else []
        return (f"unknown field {field!r}{_did_you_mean(field, allowed)}", loc,
                "the fields here are: " + ", ".join(allowed) + " (remove the field, or correct "
                "its name)" if allowed else "remove the field")
    if kind == "literal_error":
        allowed = _choices(str((error.get("ctx") or {}).get("expected", "")))
        where = " as a key" if "[key]" in error["loc"] else ""
        fix = "write one of: " + ", ".join(allowed)
        branch = model_at(root, loc) if any("literal[" in str(p) for p in error["loc"]) else None
        if branch is not None:  # a union: the literal, or a mapping
            fix += f", or a mapping with the fields: {', '.join(branch.model_fields)}"
        return (f"{shown} is not allowed here{where}{_did_you_mean(value, allowed)} (one of: "
                f"{', '.join(allowed)})", loc, fix)
    if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == "^/":
        return (f"{shown} is not a path: a path starts with /", loc,
                f"write /{str(value).lstrip('/')}" if show_values else "start it with /")
    if kind == "missing":
        field = loc[-1] if loc else "?"
        return f"{field!r} is required", loc, f"add {field}: (see {docs})"
    if kind == "model_type":
        model = model_at(root, loc)
        fields = ", ".join(model.model_fields) if model is not None else "its fields"
        return (f"expected a mapping here, got {shown}", loc,
                f"write {{…}} with the fields: {fields}")
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ValueFix):
        return f"{shown} {cause}", loc, cause.fix
    message = str(error["msg"])
    if kind == "value_error":  # our own validators say what is wrong, in our words
        return message.removeprefix("Value error, "), loc, "change the value as the message says"
    wanted = message.removeprefix("Input should be ").removeprefix("String should ").split(",")[0]
    fix = f"write {wanted}" if wanted.startswith(("a ", "an ")) else f"write a value {wanted}"
    return f"{shown}: {message[0].lower()}{message[1:]}", loc, fix
