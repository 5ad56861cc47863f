"""The answer function that makes a ``fake://`` provider behave like a model for a contract.

A conformant fake must certify and each broken behaviour must fail for its own reason, so the
fake answers from the contract's golden cases: for a golden input rendered with the contract's
own system prompt it returns the expected output; without that system prompt (the
``ignores-system-prompt`` behaviour calls ``answer(None, …)``) it returns a schema-valid but
wrong triage — what a model that never saw its instructions would plausibly do.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from harness.contracts.model import BusinessRejection, Contract
from harness.contracts.outputs import differences
from harness.contracts.render import render

Answer = Callable[[str | None, str, Mapping[str, Any]], dict[str, Any]]


def golden_answer(contract: Contract) -> Answer:
    """An ``answer(system, user, schema)`` function built from ``contract``'s golden cases."""
    by_user: dict[str, tuple[str, dict[str, Any]]] = {}
    for golden in contract.goldens:
        rendered = render(contract, golden.input)
        if rendered.error is None:
            by_user[rendered.user] = (rendered.system, dict(golden.expected))
    fallback = dict(contract.goldens[0].expected)

    def answer(system: str | None, user: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        known = by_user.get(user)
        if known is None:
            return _unlike(contract, fallback)
        expected_system, expected = known
        if system != expected_system:
            return _unlike(contract, expected)
        return copy.deepcopy(expected)

    return answer


def _unlike(contract: Contract, expected: Mapping[str, Any]) -> dict[str, Any]:
    """A valid answer (schema, business code) whose business outcome differs from ``expected``'s.

    Tries the other values of each enumerated field in turn; the first variant the business
    code accepts and that compares differently wins. Falls back to the first variant.
    """
    reference = contract.business.outcome(expected)
    first: dict[str, Any] | None = None
    for key, prop in contract.schema.get("properties", {}).items():
        choices = prop.get("enum") if isinstance(prop, Mapping) else None
        if key not in expected or not choices:
            continue
        for value in choices:
            if value == expected[key]:
                continue
            variant = {**copy.deepcopy(dict(expected)), key: value}
            first = first or variant
            try:
                outcome = contract.business.outcome(variant)
            except BusinessRejection:
                continue
            if differences(contract, outcome, reference):
                return variant
    return first or copy.deepcopy(dict(expected))
