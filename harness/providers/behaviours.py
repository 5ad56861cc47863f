"""The fake providers' behaviours: names, parsing, and what each one does (pure, no I/O).

A behaviour string is ``name`` or ``name:argument``::

    conformant              answers with a JSON object that the answer function decides
    hallucinated-key        the answer plus an extra top-level key the schema does not name
    fenced-json             the answer wrapped in a ```json fence (not parseable as JSON)
    prose                   a sentence of prose, no JSON at all
    wrong-types             the answer with every top-level value of the wrong JSON type
    ignores-system-prompt   answers as if no system prompt had been sent (answer(None, …))
    refusal                 the model refuses (OpenAI ``refusal``, Anthropic ``refusal`` stop)
    slow:<ms>               a conformant answer after <ms> milliseconds
    hang                    reads the request, never answers
    status:<code>           an HTTP error (4xx/5xx) in the wire format's error body
    reset-after-send        reads the request, then resets the connection (no response)
    truncated               sends the headers and half of the body, then closes the connection
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CONTENT_BEHAVIOURS = (
    "conformant",
    "hallucinated-key",
    "fenced-json",
    "prose",
    "wrong-types",
    "ignores-system-prompt",
    "refusal",
)
NETWORK_BEHAVIOURS = ("hang", "reset-after-send", "truncated")
PARAM_BEHAVIOURS = ("slow", "status")
ALL_BEHAVIOURS = (*CONTENT_BEHAVIOURS, *NETWORK_BEHAVIOURS, "slow:<ms>", "status:<code>")


class BehaviourError(ValueError):
    """A behaviour string that does not name a known behaviour."""


@dataclass(frozen=True, slots=True)
class Behaviour:
    """One parsed behaviour: its name and, for ``slow``/``status``, its argument."""

    name: str
    delay_s: float = 0.0
    status: int | None = None

    @classmethod
    def parse(cls, text: str) -> Behaviour:
        """Parse ``conformant``, ``slow:250``, ``status:429``…; BehaviourError if unknown."""
        if not isinstance(text, str) or not text.strip():
            raise BehaviourError(f"a behaviour must be one of: {', '.join(ALL_BEHAVIOURS)}")
        name, _, arg = text.strip().partition(":")
        if name in CONTENT_BEHAVIOURS or name in NETWORK_BEHAVIOURS:
            if arg:
                raise BehaviourError(f"behaviour {name!r} takes no argument (got {text!r})")
            return cls(name=name, delay_s=math.inf if name == "hang" else 0.0)
        if name == "slow":
            if not arg.isdigit():
                raise BehaviourError(f"{text!r}: write slow:<milliseconds>, e.g. slow:250")
            return cls(name="slow", delay_s=int(arg) / 1000)
        if name == "status":
            if not arg.isdigit() or not 400 <= int(arg) <= 599:
                raise BehaviourError(f"{text!r}: write status:<code> with a 4xx or 5xx code")
            return cls(name="status", status=int(arg))
        raise BehaviourError(
            f"unknown behaviour {text!r}; known: {', '.join(ALL_BEHAVIOURS)}"
        )

    def __str__(self) -> str:
        if self.name == "slow":
            return f"slow:{round(self.delay_s * 1000)}"
        if self.name == "status":
            return f"status:{self.status}"
        return self.name
