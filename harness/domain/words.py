"""Counts in words, for everything a person reads: ``1 trial``, ``2 trials``, ``1 of 1 trial``.

One helper for the live output, the reports and the messages (never ``trial(s)``).
"""

from __future__ import annotations


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 violation``, ``2 violations``: a count with its noun agreeing (``plural`` when the
    noun does not just take an ``s``)."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def of(k: int, n: int, word: str, plural: str | None = None) -> str:
    """``1 of 1 trial``, ``2 of 20 trials``: the noun agrees with the total."""
    return f"{k} of {counted(n, word, plural)}"
