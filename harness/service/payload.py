"""Request bodies: at most 1 MiB (read by :mod:`harness.service.asgi`), strict JSON, and nothing
that no store can keep.

::

    too large (Content-Length or streamed)       413 payload_too_large
    empty, not UTF-8, not JSON                   400 invalid_json
    nested deeper than MAX_DEPTH, a NUL or a     422 invalid_request (naming the field)
    lone surrogate in a string, an integer of
    more digits than Python converts (4,300),
    NaN/Infinity, a number beyond a 64-bit
    float (1e400), a key twice in one object
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from harness.domain.errors import HarnessError, InputError, InvalidIntent

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 64
# A body can only hold a NUL or a lone surrogate through a \u escape: look before walking.
_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


class PayloadTooLarge(HarnessError):
    """The request body is larger than 1 MiB."""

    code = "payload_too_large"
    http_status = 413


class InvalidJson(InputError):
    """The request body is not valid JSON."""

    code = "invalid_json"


class _Refused:
    """Stands in for a value no store may keep (found with its path by :func:`check_storable`)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class _Duplicated(dict[str, Any]):
    """An object that had a key twice (RFC 8785 JSON, which the fingerprint hashes, has none)."""

    duplicated: str = ""


def _constant(name: str) -> _Refused:
    return _Refused(f"is {name}, which is not a JSON number; send a finite number")


def _float(text: str) -> float | _Refused:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return _Refused(f"is {text[:40]}, beyond a 64-bit float (it overflows to infinity); "
                        "send a finite number, or the value as a string")
    return value


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            dup = _Duplicated(out)
            dup.duplicated = key
            dup.update(pairs)
            return dup
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise InvalidJson(f"the body contains {name}, which is not JSON; send a finite number")


def parse_json(raw: bytes) -> Any:
    """Strict JSON from ``raw`` (UTF-8), or :class:`InvalidJson` saying where it broke."""
    if not raw.strip():
        raise InvalidJson("the request body is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJson(f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float,
                           object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise InvalidJson(
            f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidIntent(f"the body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # valid JSON, but an integer longer than int() accepts (4,300 digits)
        raise InvalidIntent(
            f"{_huge_integer_path(text)} is an integer of more than "
            f"{sys.get_int_max_str_digits()} digits; a JSON number carries at most 2^53 − 1 "
            "exactly: send it as a string"
        ) from None
    check_storable(value, "body", suspect=bool(_SUSPECT.search(raw)))
    return value


class _Huge:
    """Stands in for an integer too long to convert, to find where it is."""


def _huge_integer_path(text: str) -> str:
    """Where the first integer too long for ``int()`` is in ``text`` (valid JSON otherwise)."""
    limit = sys.get_int_max_str_digits()

    def parse_int(digits: str) -> Any:
        return _Huge() if len(digits.lstrip("-")) > limit else 0

    def find(value: Any, path: str) -> str | None:
        if isinstance(value, _Huge):
            return path
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            found = find(item, f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]")
            if found:
                return found
        return None

    try:
        return find(json.loads(text, parse_int=parse_int, parse_constant=_reject_constant),
                    "body") or "a number in the body"
    except (ValueError, RecursionError):  # pragma: no cover - the first parse got this far
        return "a number in the body"


def check_storable(value: Any, path: str, *, suspect: bool = True, depth: int = 0) -> None:
    """Raise :class:`InvalidIntent` naming ``path`` if some store could not keep ``value``.

    PostgreSQL text and jsonb hold no NUL character, and no store can encode a lone UTF-16
    surrogate; a database error would be a 503 for what is really the client's input.
    """
    if depth > MAX_DEPTH:
        raise InvalidIntent(f"{path} is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, _Refused):
        raise InvalidIntent(f"{path} {value.why}")
    if isinstance(value, _Duplicated):
        raise InvalidIntent(
            f"{path} has the key {value.duplicated!r} twice; keep one (a JSON object's keys "
            "must be unique: the fingerprint hashes RFC 8785 JSON, which has no duplicates)"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if suspect:
                _check_text(key, f"{path} (a key)")
            check_storable(item, f"{path}.{key}", suspect=suspect, depth=depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_storable(item, f"{path}[{index}]", suspect=suspect, depth=depth + 1)
    elif suspect and isinstance(value, str):
        _check_text(value, path)


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise InvalidIntent(f"{path} contains a NUL character (\\u0000); remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidIntent(
            f"{path} contains a lone UTF-16 surrogate; send valid Unicode text"
        ) from None
