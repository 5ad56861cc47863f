"""Ids are data: an id a service answered goes into a URL as one percent-encoded path segment
(``../../x`` → ``..%2F..%2Fx``, ``?a=b`` → ``%3Fa%3Db``, ``#f`` → ``%23f``), never as URL
syntax; an id that cannot be one (a control character, a lone surrogate, over
:data:`MAX_ID_CHARS`) is refused by name (:class:`UnusableId`), so the intent that got it is
unknown, and the run goes on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from urllib.parse import quote

from harness.target.limits import MAX_ID_CHARS

__all__ = ["MAX_ID_CHARS", "UnusableId", "fill_path", "path_segment", "shown_id"]


class UnusableId(ValueError):
    """An id from the service that cannot be put into a URL (the message names it)."""


def shown_id(value: str, limit: int = 80) -> str:
    """An id as a message shows it: quoted, escapes visible, long ones cut."""
    text = repr(value[:limit])
    return text + (f"… ({len(value):,} characters)" if len(value) > limit else "")


def path_segment(value: object, what: str = "job id") -> str:
    """``value`` percent-encoded as one path segment; :class:`UnusableId` naming it if it
    cannot be one."""
    text = str(value)
    if not text:
        raise UnusableId(f"the service answered an empty {what}")
    if len(text) > MAX_ID_CHARS:
        raise UnusableId(f"the {what} the service answered, {shown_id(text)}, is over "
                         f"{MAX_ID_CHARS:,} characters: it cannot be put into a URL")
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in text):
        raise UnusableId(f"the {what} the service answered, {shown_id(text)}, holds a control "
                         "character: it cannot be one path segment of a URL")
    if text in (".", ".."):  # a dot segment would be resolved away, not sent
        return text.replace(".", "%2E")
    return quote(text, safe="")


def fill_path(template: str, values: Mapping[str, object]) -> str:
    """``template`` (``/jobs/{job_id}``) with each ``{name}`` in ``values`` as one path
    segment (:func:`path_segment`)."""
    for name, value in values.items():
        mark = "{" + name + "}"
        if mark in template:
            template = template.replace(mark, path_segment(value, name.replace("_", " ")))
    return template
