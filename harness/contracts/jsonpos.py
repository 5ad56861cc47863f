"""Where each value of a JSON document starts: JSON path → line, for errors that name a line.

``json.loads`` forgets positions; a schema error found later (by the JSON Schema meta-schema,
or by our own checks) only has a path like ``properties/category/type``. :func:`json_lines`
scans the same text once more and maps every path to the line its value starts on (for an
object member, the line of its key). The scan is iterative, so a deep document cannot exhaust
the stack, and paths stop growing at :data:`MAX_DEPTH`; it assumes the text already parsed
with ``json.loads``.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Sequence

Path = tuple[str | int, ...]

MAX_DEPTH = 64  # paths longer than this are not recorded (memory stays linear in the text)
_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


def json_lines(text: str) -> dict[Path, int]:
    """Every path in the JSON ``text`` → the 1-based line where its value (or key) starts."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(at: int) -> int:
        return bisect_right(starts, at)

    out: dict[Path, int] = {}
    # A stack of open containers: (path, kind "{"/"[", next index for arrays).
    stack: list[list] = []
    i = _WS.match(text, 0).end()  # type: ignore[union-attr]
    pending: Path = ()  # the path of the value about to start
    out[()] = line(i)
    while i < len(text):
        char = text[i]
        if char in "{[":
            out.setdefault(pending, line(i))
            stack.append([pending, char, 0])
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            if i < len(text) and text[i] in "}]":
                continue  # empty container: closed below
            pending = _next_member(stack, text, i, out, line)
            if stack[-1][1] == "{":
                i = _after_key(text, i)
            continue
        if char in "}]":
            stack.pop()
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        elif char == '"':
            out.setdefault(pending, line(i))
            _, i = _scanstring(text, i + 1)
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
        else:
            match = _SCALAR.match(text, i)
            if match is None:
                break  # not JSON (the caller parsed it first: does not happen)
            out.setdefault(pending, line(i))
            i = _WS.match(text, match.end()).end()  # type: ignore[union-attr]
        if i < len(text) and text[i] == "," and stack:
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            pending = _next_member(stack, text, i, out, line)
            if stack[-1][1] == "{":
                i = _after_key(text, i)
    return out


def _next_member(stack: list[list], text: str, i: int, out: dict[Path, int], line) -> Path:
    """The path of the next member of the innermost container (its key's line for objects)."""
    path, kind, index = stack[-1]
    if len(path) >= MAX_DEPTH:  # deeper values are placed at their ancestor's line
        return path
    if kind == "[":
        stack[-1][2] = index + 1
        return (*path, index)
    key, _ = _scanstring(text, i + 1)
    member = (*path, key)
    out.setdefault(member, line(i))
    return member


def _after_key(text: str, i: int) -> int:
    """From a key's opening quote to the start of its value."""
    _, i = _scanstring(text, i + 1)
    i = _WS.match(text, i).end()  # type: ignore[union-attr]
    return _WS.match(text, i + 1).end()  # type: ignore[union-attr]  # past ':'


def line_of(lines: dict[Path, int], path: Sequence[str | int]) -> int | None:
    """The line of ``path``, or of its nearest ancestor that has one."""
    parts = tuple(path)
    while parts not in lines and parts:
        parts = parts[:-1]
    return lines.get(parts)
