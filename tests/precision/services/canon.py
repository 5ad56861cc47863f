"""RFC 8785 (JSON Canonicalization Scheme), written here from the RFC, not imported.

Numbers are IEEE-754 doubles serialised as ECMAScript's ``Number.prototype.toString`` does;
object members are sorted by the UTF-16 code units of their names; strings escape only what
JSON must. The precision services use it for API.md's request fingerprint.
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and Infinity have no JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    exponent = int(digits_tuple.exponent)
    k = len(digits)
    n = k + exponent  # value = 0.digits × 10^n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mark = "+" if e >= 0 else "-"
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{mark}{abs(e)}"
    return sign + body


def canonical(value: Any) -> str:
    """``value`` (parsed JSON) as RFC 8785 text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _number(float(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        names = sorted(value, key=lambda name: name.encode("utf-16-be"))
        return "{" + ",".join(_string(n) + ":" + canonical(value[n]) for n in names) + "}"
    raise TypeError(f"not JSON: {type(value).__name__}")


def fingerprint(intent: dict[str, Any]) -> str:
    """API.md's fingerprint: SHA-256 (hex) of the canonical JSON of the intent."""
    return hashlib.sha256(canonical(intent).encode("utf-8")).hexdigest()
