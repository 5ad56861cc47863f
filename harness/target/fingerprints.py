"""How idempotency layers compare request bodies, as the runner must reproduce them.

``parsed-json`` is JavaScript's ``JSON.stringify(JSON.parse(body))`` (the comparison of
@node-idempotency/core, and of layers that hash the parsed body): whitespace and the spelling
of a number (``1``, ``1.0``, ``1e0``) do not count, the order of an object's keys does. The
engine's rule is JavaScript's: keys that are array indices ("0", "17") come first in numeric
order, the others in the order written; a repeated key keeps its first place and its last value.
Numbers are IEEE doubles (a 20-digit integer loses its last digits, as in JavaScript).
"""

from __future__ import annotations

import json
from typing import Any

_MAX_INDEX = 2**32 - 2


def _is_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or not key.startswith("0")) \
        and int(key) <= _MAX_INDEX


def _number(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "null"  # JSON.stringify(NaN) (JSON.parse never yields one)
    if value == 0:
        return "0"  # -0 too
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)  # the shortest round trip: equal doubles, equal text


def _stringify(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)
        ordered = sorted((k for k in keys if _is_index(k)), key=int) + \
            [k for k in keys if not _is_index(k)]
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _stringify(value[k])
                              for k in ordered) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_stringify(v) for v in value) + "]"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return _number(float(value))


def js_stringify(text: str) -> str:
    """``JSON.stringify(JSON.parse(text))``, up to the escaping of strings (equal values give
    equal text, and different values different text)."""
    return _stringify(json.loads(text, parse_int=float, parse_constant=float))
