"""Judge one model answer: strict JSON, hallucinated keys, JSON Schema, business model; and compare.

Pure code: text in, verdict out. The reasons are the ones a certification record shows.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from harness.contracts.model import BusinessRejection, Contract
from harness.domain.fingerprint import canonical_json

_FENCED = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on one answer. ``failure`` is a short category, ``reason`` says it in words."""

    failure: str | None = None
    reason: str | None = None
    output: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _TooDeep(ValueError):
    pass


def _strict_loads(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except RecursionError:
        raise _TooDeep from None


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def _schema_key(schema: Mapping[str, Any]) -> str:
    """The schema's text with its keys sorted: the key of its validator, made for every answer
    judged (the C encoder; RFC 8785's pure-Python one took a sixth of a certification's CPU).
    The contract's hash, which must be canonical, is made once, at load."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def parse_strict(text: str, allow_stripping: frozenset[str]) -> tuple[Any, str | None, str | None]:
    """``(value, failure, reason)``: strict JSON, or fences / prose stripped when allowed."""
    try:
        return _strict_loads(text), None, None
    except _Duplicate as exc:
        return None, "duplicate_key", f"duplicate key {exc.args[0]!r} in the JSON object"
    except _TooDeep:
        return None, "too_deep", "the answer nests deeper than a JSON parser accepts"
    except ValueError:
        pass
    fenced = _FENCED.match(text)
    if fenced:
        if "fences" not in allow_stripping:
            return None, "fenced", (
                "JSON wrapped in ``` code fences; the contract requires bare JSON "
                "(output.allow_stripping does not include 'fences')"
            )
        return parse_strict(fenced.group("body"), allow_stripping - {"fences"})
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            value = _strict_loads(text[start : end + 1])
        except ValueError:
            value = None
        if value is not None:
            if "prose" not in allow_stripping:
                return None, "prose", (
                    "JSON surrounded by prose; the contract requires bare JSON "
                    "(output.allow_stripping does not include 'prose')"
                )
            return value, None, None
    if text.strip() and not text.lstrip().startswith(("{", "[")):
        return None, "prose", "the answer is prose, not JSON"
    return None, "not_json", "the answer is not valid JSON (cut off or malformed)"


def judge(
    contract: Contract,
    text: str | None,
    *,
    parsed: Any = None,
    finish_reason: str | None = None,
    refusal: str | None = None,
) -> Judgement:
    """Judge one answer against ``contract``: parse, keys, schema, business model and rules."""
    if refusal:
        return Judgement("refused", f"the model refused: {refusal}")
    if finish_reason in ("length", "max_tokens"):
        return Judgement("truncated", f"the answer was cut off (finish reason {finish_reason!r})")
    if text is not None:
        value, failure, reason = parse_strict(text, contract.allow_stripping)
        if failure:
            return Judgement(failure, reason)
    elif parsed is not None:
        value = parsed
    else:
        return Judgement("empty", "the answer has no content")
    if not isinstance(value, dict):
        kind = type(value).__name__
        return Judgement("not_object", f"the answer is a JSON {kind}, not an object")
    known = contract.schema.get("properties", {})
    extra = [k for k in value if k not in known]
    if extra:
        return Judgement(
            "hallucinated_key",
            f"hallucinated key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} "
            "(not in the contract's schema)",
            output=value,
        )
    error = best_match(_validator(_schema_key(contract.schema)).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Judgement("schema", f"JSON Schema: {where}: {error.message}", output=value)
    try:
        outcome = contract.business.outcome(value)
    except BusinessRejection as exc:
        return Judgement("business", str(exc), output=value)
    return Judgement(output=value, outcome=outcome)


def differences(
    contract: Contract, got: Mapping[str, Any], expected: Mapping[str, Any]
) -> list[str]:
    """Fields of two business outcomes that differ under the contract's comparison rules."""
    out = []
    for key in sorted(set(got) | set(expected)):
        rule = contract.compare_rule(key)
        if rule.kind == "ignore":
            continue
        if key not in got or key not in expected:
            side = "answer" if key not in got else "expectation"
            out.append(f"{key}: missing from the {side}")
            continue
        a, b = got[key], expected[key]
        if rule.kind == "numeric":
            same = (
                _is_number(a) and _is_number(b) and math.fabs(float(a) - float(b)) <= rule.tolerance
            )
        elif rule.kind == "set":
            same = (
                isinstance(a, list)
                and isinstance(b, list)
                and {canonical_json(x) for x in a} == {canonical_json(x) for x in b}
            )
        else:
            same = (type(a) is type(b) and a == b) or (_is_number(a) and _is_number(b) and a == b)
        if not same:
            out.append(f"{key}: expected {b!r}, got {a!r} ({rule.describe()})")
    return out


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
