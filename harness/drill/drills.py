"""The drills: what the primary provider does to one intent (the fallbacks answer), in words.

Pure. A drill's primary behaviour is a :class:`~harness.providers.recording.RecordingFake`
script. Answers can be **held** (docs/drill.md, "Held answers"): ``late``'s primary answers only
once the drill lets it go (after the fallback's answer was delivered and the job was observed
complete); in the timeout drills the fallback's answer waits, briefly, until the job was observed
twice after the fallback's call arrived.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from harness.providers.recording import STREAM_CUT

Clicks = Literal["once", "together", "staggered", "again"]
#: looks at the job the drill takes while the fallback's answer is held, in the timeout drills
HELD_LOOKS = 2


@dataclass(frozen=True, slots=True)
class Drill:
    """One scripted failure of the primary, for one intent."""

    name: str
    description: str
    primary: str  # the primary's behaviour for the intent's calls
    #: how the intent is submitted: once; twice from one barrier (a double click); twice, the
    #: second once the primary's call arrived; again after the service's timeout (a re-click)
    clicks: Clicks = "once"
    timeout: bool = False  # the primary is merely slow or silent: the timeout promise applies
    hold_primary: bool = False  # the primary's answer waits until the fallback's was delivered

    @property
    def submits(self) -> int:
        return 1 if self.clicks == "once" else 2


DRILLS: dict[str, Drill] = {d.name: d for d in (
    Drill("control", "the primary answers at once", "conformant"),
    Drill("hang", "the primary reads the request and never answers", "hang", timeout=True),
    Drill("late", "the primary answers only after the fallback's answer was delivered and the "
          "job observed complete", "conformant", timeout=True, hold_primary=True),
    Drill("5xx", "the primary answers HTTP 500", "status:500"),
    Drill("overload-429", "the primary refuses with 429 (rate limited)", "status:429"),
    Drill("overload-529", "the primary refuses with 529 (overloaded)", "status:529"),
    Drill("reset", "the primary reads the request, then resets the connection",
          "reset-after-send"),
    Drill("stream-cut", "the primary starts a stream, then cuts it after the first bytes",
          STREAM_CUT),
    Drill("double-click", "the intent is submitted twice at the same instant (same key) while "
          "the primary hangs", "hang", clicks="together", timeout=True),
    Drill("double-click-staggered", "the intent is submitted twice (same key), the second once "
          "the primary's call arrived", "hang", clicks="staggered", timeout=True),
    Drill("re-click", "the intent is submitted again (same key) after the service's timeout, "
          "while the primary's call is unresolved", "hang", clicks="again", timeout=True),
)}
NAMES = tuple(DRILLS)


def late_ms(provider_timeout_s: float) -> int:
    """When a late primary answers a chat call (a gateway: not observed, so not held): past the
    service's timeout by as much again, and by at least a second, so that a gateway slowed by
    a loaded machine has cut the call by then (at half the timeout, 0.5 s, LiteLLM under a
    parallel test run was seen still waiting, and the primary's answer reached it)."""
    return round((provider_timeout_s + max(1.0, provider_timeout_s)) * 1000)


def parse_names(text: str) -> list[str]:
    """``--drills`` (comma-separated, or ``all``; ``_`` for ``-``); ValueError naming the
    unknown ones, with the nearest name."""
    names = [n.strip().replace("_", "-") for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(NAMES)
    unknown = [n for n in names if n not in DRILLS]
    if unknown or not names:
        near = [m for n in unknown for m in difflib.get_close_matches(n, NAMES, n=1)]
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise ValueError(f"unknown drill(s) {', '.join(unknown) or '(none)'}{hint}; choose "
                         f"from {', '.join(NAMES)} or all")
    return list(dict.fromkeys(names))
