"""The drills: what the primary provider does to one intent (the fallbacks answer), in words.

Pure. A drill's primary behaviour is a :class:`~harness.providers.recording.RecordingFake`
script; ``{late}`` becomes ``slow:<ms>`` past the service's provider timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.providers.recording import STREAM_CUT


@dataclass(frozen=True, slots=True)
class Drill:
    """One scripted failure of the primary, for one intent."""

    name: str
    description: str
    primary: str  # the primary's behaviour for the intent's calls
    clicks: int = 1  # how many times the intent is submitted (a double click: 2)
    timeout: bool = False  # the primary is merely slow or silent: the timeout promise applies


DRILLS: dict[str, Drill] = {d.name: d for d in (
    Drill("control", "the primary answers at once", "conformant"),
    Drill("hang", "the primary reads the request and never answers", "hang", timeout=True),
    Drill("late", "the primary answers after the service's timeout, the fallback answers at once",
          "{late}", timeout=True),
    Drill("5xx", "the primary answers HTTP 500", "status:500"),
    Drill("overload-429", "the primary refuses with 429 (rate limited)", "status:429"),
    Drill("overload-529", "the primary refuses with 529 (overloaded)", "status:529"),
    Drill("reset", "the primary reads the request, then resets the connection",
          "reset-after-send"),
    Drill("stream-cut", "the primary starts a stream, then cuts it after the first bytes",
          STREAM_CUT),
    Drill("double-click", "the intent is submitted twice while the primary hangs", "hang",
          clicks=2, timeout=True),
)}
NAMES = tuple(DRILLS)


def late_ms(provider_timeout_s: float) -> int:
    """When the late primary answers: past the service's timeout by half of it (≥ 200 ms)."""
    return round((provider_timeout_s + max(0.2, provider_timeout_s / 2)) * 1000)


def primary_behaviour(drill: Drill, provider_timeout_s: float) -> str:
    return drill.primary.replace("{late}", f"slow:{late_ms(provider_timeout_s)}")


def parse_names(text: str) -> list[str]:
    """``--drills`` (comma-separated, or ``all``); ValueError naming the unknown ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(NAMES)
    unknown = [n for n in names if n not in DRILLS]
    if unknown or not names:
        raise ValueError(f"unknown drill(s) {', '.join(unknown) or '(none)'}; choose from "
                         f"{', '.join(NAMES)} or all")
    return names
