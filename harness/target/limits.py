"""What the harness accepts from a target: the largest answer body and the total deadline of
one request (connect + headers + body). Pure data; the profile's ``limits:`` fills it in and
:mod:`harness.target.bounded` enforces it.

Defaults (docs/robustness.md, "Limits on what a target sends"): a body of at most 1 MiB and
30 s for a whole request in scenarios; the drill ties the deadline to the intent's budget.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MIB = 1024 * 1024
DEFAULT_BODY_BYTES = MIB
DEFAULT_DEADLINE_S = 30.0
#: a job id longer than this cannot be put into a URL (RFC 9110 suggests 8,000 octets a line)
MAX_ID_CHARS = 1024


class Limits(BaseModel):
    """``limits: {body_bytes: 1048576, deadline_s: 30}`` in a target profile."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: the largest answer body read from the target (more is the target's error)
    body_bytes: int = Field(default=DEFAULT_BODY_BYTES, ge=1024, le=1024 * MIB)
    #: seconds for one whole request (connect, send, headers, body); None: the caller's default
    deadline_s: float | None = Field(default=None, gt=0, le=3600)


def size_text(n: int) -> str:
    """``1,048,576 bytes (1.0 MiB)``: a body size as messages name it."""
    return f"{n:,} bytes" + (f" ({n / MIB:.1f} MiB)" if n >= MIB else "")
