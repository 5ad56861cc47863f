"""What a job's entry point gives: a stream of messages, ending with the job's verdict.

Every job (``check``, ``scenarios run``, ``replay``, ``certify``, ``gate``, ``explore``) has an
entry point in its engine: ``run_x(settings, *, folder, live) -> Stream``. It takes a frozen,
keyword-only settings object, and yields, in order:

- :class:`Begin` once, when the run knows what it judges (after every check of its input: bad
  input raises :class:`~harness.domain.errors.HarnessError` before, and nothing is reported);
- the engine's typed events (a scenario run, a certification record, a gate verdict, …), each
  with its ``outcome``;
- :class:`Note` (a line every rendering shows at its end), :class:`AddTarget` (a target
  learnt after the start) and :class:`ReportFile` (a file of its own in the report folder);
- for a shard of a run (``--shard K/N``), :class:`Sharded` once (its stamp) and
  :class:`ShardEvidence` after an event that ``merge`` judges again from evidence.

It *returns* the run's verdict (the worst outcome, :func:`worst`), as a generator returns.
Live progress (lines, bars) goes to the :class:`Live` it is given, never into the results.
A caller hands each message to a report session (``commands/_report.play``); a test collects
them (:func:`collect`). The stream decides nothing the caller could decide otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, Protocol

from harness.domain.shard import ShardStamp
from harness.domain.verdicts import Verdict


@dataclass(frozen=True)
class Begin:
    """The run starts: what it judges (shown in every rendering's header)."""

    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Note:
    """A line every rendering shows at its end."""

    text: str


@dataclass(frozen=True)
class AddTarget:
    """A target learnt after the start."""

    target: str


@dataclass(frozen=True)
class ReportFile:
    """A file of the run's own beside the results in the report folder (``drill.json``): JSON
    data, written scrubbed of every secret like the renderings."""

    name: str
    data: Any


@dataclass(frozen=True)
class Sharded:
    """The run is one shard of a run split over N jobs (``--shard K/N``): what it records so
    ``merge`` can put the shards together (its stamp, the canonical order of its units)."""

    stamp: ShardStamp
    order: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShardEvidence:
    """What ``merge`` needs to judge the event just yielded again over every shard's evidence
    (JSON data: per-trial records, a search's tally); only a shard yields it."""

    data: dict[str, Any]


#: an entry point's stream: Begin, Note, AddTarget and the engine's events; returns the verdict
Stream = Generator[Any, None, Verdict]
#: where a run writes its run and repro folders (called only when it writes one)
Folder = Callable[[], Path]


class Live(Protocol):
    """Live progress for a person watching: lines and bars (never part of the results)."""

    def say(self, text: str) -> None: ...

    def bar(self, label: str, total: float) -> Any:
        """A context manager giving ``advance(n)``; a bar while it is open."""
        ...


class Quiet:
    """No live output (tests, and callers without a terminal)."""

    def say(self, text: str) -> None:
        return None

    @contextmanager
    def bar(self, label: str, total: float) -> Iterator[Callable[[float], None]]:
        yield QUIET_BAR


def QUIET_BAR(n: float = 1) -> None:
    return None


QUIET = Quiet()


def worst(outcomes: Iterable[str]) -> Verdict:
    """The run's verdict: fail, else unknown, else pass (a skip counts for nothing)."""
    seen = set(outcomes)
    return "fail" if "fail" in seen else "unknown" if "unknown" in seen else "pass"


def verdict_of(events: Iterable[Any]) -> Verdict:
    """The worst outcome of the events in ``events`` (messages without one are skipped)."""
    return worst(getattr(e, "outcome", "pass") for e in events)


def entry_point(job: Callable[..., Iterator[Any]]) -> Callable[..., Stream]:
    """Make ``job`` (a generator of messages) an entry point: its stream returns the verdict,
    the worst outcome of what it yielded."""

    @wraps(job)
    def run(*args: Any, **kwargs: Any) -> Stream:
        outcomes: list[str] = []
        for message in job(*args, **kwargs):
            outcomes.append(getattr(message, "outcome", "pass"))
            yield message
        return worst(outcomes)

    return run


def collect(stream: Stream) -> tuple[list[Any], Verdict]:
    """Every message of ``stream`` and the verdict it returned (for tests and scripts)."""
    messages: list[Any] = []
    while True:
        try:
            messages.append(next(stream))
        except StopIteration as stop:
            return messages, stop.value
