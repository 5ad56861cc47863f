"""A target profile's validation errors in the user's words: :mod:`harness.validation`, the
one translation of pydantic's errors every config loader uses, with the profile's docs page."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from harness.validation import ValueFix
from harness.validation import explain as translate

ProfileValueError = ValueFix  # a profile field validator's refusal, with the fix to show

__all__ = ["ProfileValueError", "explain"]


def explain(root: type[BaseModel], errors: list[ErrorDetails],
            **options: Any) -> tuple[str, tuple[str | int, ...], str]:
    """:func:`harness.validation.explain`, pointing a missing field at the profiles' docs."""
    options.setdefault("docs", "docs/scenarios.md, Target profiles")
    return translate(root, errors, **options)
