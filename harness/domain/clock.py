"""Clocks: the wall clock for production, a manual clock for virtual time."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the current UTC time."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real UTC wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class ManualClock:
    """A clock that moves only when told to: virtual time for scenarios and tests."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` (never backwards) and return the new time."""
        if seconds < 0:
            raise ValueError("a clock never goes backwards")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` if it is not in the past."""
        with self._lock:
            if when < self._now:
                raise ValueError("a clock never goes backwards")
            self._now = when


@lru_cache(maxsize=1024)
def rfc3339(when: datetime) -> str:
    """``when`` as RFC 3339 UTC with microseconds and a ``Z``. Remembered: a virtual clock's
    few instants are written many times (equal datetimes are the same instant: the same text)."""
    if when.utcoffset():
        when = when.astimezone(UTC)
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


@lru_cache(maxsize=1024)
def parse_rfc3339(text: str) -> datetime:
    """Parse what :func:`rfc3339` wrote (and any ISO 8601 with an offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
