"""Request bodies: read at most 1 MiB, parse strict JSON, reject what no store can keep.

::

    too large (Content-Length or streamed)       413 payload_too_large
    empty, not UTF-8, not JSON, NaN/Infinity     400 invalid_json
    nested deeper than MAX_DEPTH, a NUL or a     422 invalid_request (naming the field)
    lone surrogate in a string
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request

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


def _reject_constant(name: str) -> Any:
    raise InvalidJson(f"the body contains {name}, which is not JSON; send a finite number")


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The raw body, refusing (413) anything over ``limit`` before reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body has {int(declared)} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes) -> Any:
    """Strict JSON from ``raw`` (UTF-8), or :class:`InvalidJson` saying where it broke."""
    if not raw.strip():
        raise InvalidJson("the request body is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJson(f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidJson(
            f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidIntent(f"the body is nested deeper than {MAX_DEPTH} levels") from None
    check_storable(value, "body", suspect=bool(_SUSPECT.search(raw)))
    return value


def check_storable(value: Any, path: str, *, suspect: bool = True, depth: int = 0) -> None:
    """Raise :class:`InvalidIntent` naming ``path`` if some store could not keep ``value``.

    PostgreSQL text and jsonb hold no NUL character, and no store can encode a lone UTF-16
    surrogate; a database error would be a 503 for what is really the client's input.
    """
    if depth > MAX_DEPTH:
        raise InvalidIntent(f"{path} is nested deeper than {MAX_DEPTH} levels")
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
