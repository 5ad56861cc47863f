"""Intent validation, idempotency-key validation and the intent fingerprint (RFC 8785 + SHA-256)."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import rfc8785

from harness.domain.errors import IdempotencyKeyInvalid, IdempotencyKeyMissing, InvalidIntent

# Printable ASCII without space (API.md: "1–255 printable ASCII, no spaces").
_KEY_RE = re.compile(r"[\x21-\x7e]{1,255}")
# The largest integer a JSON number carries exactly (an IEEE double; RFC 8785 §3.2.2.3).
MAX_SAFE_INTEGER = 2**53 - 1


def validate_idempotency_key(key: str | None) -> str:
    """Return ``key`` if it is a valid idempotency key, else raise the matching error."""
    if key is None or key == "":
        raise IdempotencyKeyMissing()
    if not _KEY_RE.fullmatch(key):
        raise IdempotencyKeyInvalid(
            f"Idempotency-Key must be 1–255 printable ASCII characters without spaces "
            f"(got {len(key)} characters{_first_bad(key)})"
        )
    return key


def _first_bad(key: str) -> str:
    for i, ch in enumerate(key):
        if not ("\x21" <= ch <= "\x7e"):
            return f"; character {i + 1} is {ch!r}"
    return ""


def check_json_value(value: Any, path: str) -> None:
    """Raise :class:`InvalidIntent` naming ``path`` if ``value`` is not strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidIntent(
            f"{path} is {value!r}; JSON has no NaN or Infinity: send a finite number"
        )
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        raise InvalidIntent(
            f"{path} is an integer beyond ±(2^53 − 1), which a JSON number cannot carry exactly "
            "(RFC 8785); send it as a string"
        )
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidIntent(
                f"{path} contains a NUL character (U+0000), which no store keeps alike; remove it"
            )
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidIntent(f"{path} has a non-string key {k!r}")
            if "\x00" in k:
                raise InvalidIntent(f"{path} has a key with a NUL character (U+0000); remove it")
            check_json_value(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_json_value(v, f"{path}[{i}]")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise InvalidIntent(f"{path} holds a {type(value).__name__}, which is not JSON")


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical JSON of ``value`` (sorted keys, shortest numbers, UTF-8)."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise InvalidIntent(f"the value cannot be written as canonical JSON: {exc}") from None


def fingerprint(intent: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``intent``."""
    return hashlib.sha256(canonical_json(intent)).hexdigest()


def payload_digest(payload: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of any JSON value (results, discarded payloads)."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()
