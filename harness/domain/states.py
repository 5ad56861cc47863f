"""Job statuses, attempt states and the attempt state machine (API.md's transition table)."""

from __future__ import annotations

from enum import StrEnum

from harness.domain.errors import InvalidTransition


class JobStatus(StrEnum):
    """Where a job stands."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AttemptState(StrEnum):
    """Where one attempt stands."""

    STARTING = "starting"
    RUNNING = "running"
    UNKNOWN = "unknown"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_open(self) -> bool:
        """Open attempts hold a slot: starting, running, unknown."""
        return self in OPEN_STATES


class EventType(StrEnum):
    """What can happen to an attempt."""

    DISPATCHED = "dispatched"
    TIMED_OUT = "timed_out"
    FAILED = "failed"
    SUCCEEDED = "succeeded"
    CANCELLED = "cancelled"


class ClaimOutcome(StrEnum):
    """How an attempt's result claim ended."""

    WON = "won"
    LOST = "lost"


OPEN_STATES = frozenset({AttemptState.STARTING, AttemptState.RUNNING, AttemptState.UNKNOWN})
TERMINAL_STATES = frozenset({AttemptState.SUCCEEDED, AttemptState.FAILED, AttemptState.CANCELLED})
JOB_FINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.CANCELLED})

_S = AttemptState
# event -> (allowed source states, target state); exactly API.md's table.
TRANSITIONS: dict[EventType, tuple[frozenset[AttemptState], AttemptState]] = {
    EventType.DISPATCHED: (frozenset({_S.STARTING}), _S.RUNNING),
    EventType.TIMED_OUT: (frozenset({_S.STARTING, _S.RUNNING}), _S.UNKNOWN),
    EventType.FAILED: (frozenset({_S.STARTING, _S.RUNNING, _S.UNKNOWN}), _S.FAILED),
    EventType.SUCCEEDED: (frozenset({_S.STARTING, _S.RUNNING, _S.UNKNOWN}), _S.SUCCEEDED),
    EventType.CANCELLED: (frozenset({_S.STARTING, _S.RUNNING, _S.UNKNOWN}), _S.CANCELLED),
}


def next_state(current: AttemptState, event: EventType) -> AttemptState:
    """The state ``event`` moves an attempt in ``current`` to, or :class:`InvalidTransition`.

    A result that reaches a cancelled attempt is not a transition: the store records it as a
    lost claim and the attempt stays cancelled (see ``Store.succeed``), so it is not listed here.
    """
    sources, target = TRANSITIONS[event]
    if current not in sources:
        raise InvalidTransition(from_state=current.value, to_state=target.value, event=event.value)
    return target
