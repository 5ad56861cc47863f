"""The seeded discrete-event scheduler: virtual time, and the seam that chooses what happens next.

Events wait in a queue keyed by virtual time. The scheduler always runs an event of the earliest
time; when several are enabled at that time (one per process: each process is sequential), a
:class:`ChoiceSource` picks one. The clock then jumps to the event's time: a 30-second provider
delay costs nothing. Every executed event is appended to the schedule, which is what ``replay``
(and ``explore``) feed back through :class:`RecordedChoices`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from harness.domain.clock import EPOCH, ManualClock
from harness.domain.errors import HarnessError


class Divergence(HarnessError):
    """The run no longer follows the recorded schedule."""

    exit_code = 1


class ChoiceSource(Protocol):
    """Chooses which of several enabled events runs next (``enabled`` has 2 or more labels)."""

    def choose(self, enabled: Sequence[str]) -> int: ...


class SeededChoices:
    """Pseudo-random choices from a seed: the same seed, the same choices."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def choose(self, enabled: Sequence[str]) -> int:
        return self.random.randrange(len(enabled))


class RecordedChoices:
    """Replays recorded decisions in order; an absent choice is a :class:`Divergence`."""

    def __init__(self, decisions: Iterable[str]) -> None:
        self.decisions = list(decisions)
        self.position = 0

    def choose(self, enabled: Sequence[str]) -> int:
        if self.position >= len(self.decisions):
            raise Divergence(
                f"decision {self.position + 1} was not recorded; enabled now: {list(enabled)}"
            )
        wanted = self.decisions[self.position]
        self.position += 1
        if wanted not in enabled:
            raise Divergence(
                f"decision {self.position}: the recorded event {wanted!r} is not enabled; "
                f"enabled now: {list(enabled)}"
            )
        return list(enabled).index(wanted)


def decisions_of(schedule: Iterable[dict[str, Any]]) -> list[str]:
    """The choices made in a recorded schedule (the entries where more than one was enabled)."""
    return [entry["event"] for entry in schedule if "enabled" in entry]


@dataclass(slots=True)
class Event:
    """Something that happens at a virtual time, in a process, once ``needs`` are settled."""

    time: float
    process: str
    what: str
    action: Callable[[], None]
    needs: frozenset[str] = frozenset()
    seq: int = 0

    @property
    def label(self) -> str:
        return f"{self.time:.3f} {self.process} {self.what}"


@dataclass
class Scheduler:
    """Runs events in virtual-time order on ``clock``, asking ``choices`` to break ties."""

    clock: ManualClock
    choices: ChoiceSource
    start: datetime = EPOCH
    pending: list[Event] = field(default_factory=list)
    settled: set[str] = field(default_factory=set)
    schedule: list[dict[str, Any]] = field(default_factory=list)
    now: float = 0.0
    _seq: int = 0

    def at(
        self,
        time: float,
        process: str,
        what: str,
        action: Callable[[], None],
        needs: Iterable[str] = (),
    ) -> Event:
        """Queue ``action`` at virtual ``time`` (never in the past) in ``process``."""
        time = round(max(time, self.now), 6)
        self._seq += 1
        event = Event(time, process, what, action, frozenset(needs), self._seq)
        self.pending.append(event)
        return event

    def cancel_process(self, process: str) -> list[Event]:
        """Drop every pending event of ``process`` (its worker died); return them."""
        dropped = [e for e in self.pending if e.process == process]
        self.pending = [e for e in self.pending if e.process != process]
        return dropped

    def settle(self, name: str) -> None:
        """Mark ``name`` as defined: events needing it may run."""
        self.settled.add(name)

    def enabled(self) -> list[Event]:
        """The events that may run next: the earliest time, one per process, needs settled."""
        if not self.pending:
            return []
        soonest = min(e.time for e in self.pending)
        first: dict[str, Event] = {}
        for event in self.pending:
            if event.time == soonest:
                held = first.get(event.process)
                if held is None or event.seq < held.seq:
                    first[event.process] = event
        ready = [e for e in first.values() if e.needs <= self.settled]
        return sorted(ready, key=lambda e: (e.process, e.seq))

    def step(self) -> bool:
        """Run one event; False when nothing is left."""
        enabled = self.enabled()
        if not enabled:
            if self.pending:
                stuck = ", ".join(e.label for e in self.pending)
                raise RuntimeError(f"scheduler stuck: nothing enabled among {stuck}")
            return False
        labels = [e.label for e in enabled]
        event = enabled[self.choices.choose(labels)] if len(enabled) > 1 else enabled[0]
        entry: dict[str, Any] = {"n": len(self.schedule), "time": event.time, "event": event.label}
        if len(enabled) > 1:
            entry["enabled"] = labels
        self.schedule.append(entry)
        self.pending.remove(event)
        self.now = event.time
        self.clock.set(self.start + timedelta(seconds=event.time))
        event.action()
        return True

    def run(self) -> None:
        """Run until no event is left."""
        while self.step():
            pass
