"""Held answers and hung calls of a recording fake: the drill decides when each is delivered.

A fake's answers for one tag can be **held** (:meth:`HeldAnswers.hold`): each waits, without
busy waiting (an asyncio event per request), until the drill lets the tag go
(:meth:`HeldAnswers.let_go`), the caller leaves, or the hold's ``max_s`` passed since the call
arrived (the backstop: a held answer must reach a caller that would otherwise give up on it).
A **hung** call (behaviour ``hang``) waits until its caller leaves, or until the drill releases
its tag (:meth:`HeldAnswers.release`; the fake then resets the connection).

Each held call learns how its hold ended (:class:`Freed`): let go by the drill, at the
backstop, or its caller left first. The drill's judge reads it: an answer that went at the
backstop went without the drill's say, so what the drill meant to see before it may not have
been seen (docs/drill.md, "Held answers").

A call that arrives **after an answer** of its tag (:class:`AfterAnswer`, shared by the fakes of
one drill) waits until the drill has looked at the job since it arrived: a queue's re-run, or a
redelivered job, does not change a result before the drill saw the first one (at most ``max_s``
after the call arrived: the backstop again).

This is the FoundationDB-simulation idea applied from outside a black box: the test, not the
machine's load, decides which message is delivered when.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from harness.providers.fake import _until_disconnect

#: how a held answer's wait ended: the drill let it go, the backstop passed, the caller left
Freed = Literal["drill", "backstop", "left"]
_Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Event]


@dataclass
class _Gate:
    """The held answers of one tag: closed until the drill lets them go."""

    open: bool = False
    waiters: list[_Waiter] = field(default_factory=list)
    max_s: float | None = None  # a held answer goes anyway this long after its call arrived


_G = TypeVar("_G")


class _ByTag(Generic[_G]):
    """Gates by tag, under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._gates: dict[str, _G] = {}

    def forget(self, tag: str) -> None:
        """Drop ``tag``'s gate (its intent is closed)."""
        with self._lock:
            self._gates.pop(tag, None)

    def clear(self) -> None:
        with self._lock:
            self._gates.clear()


class HeldAnswers(_ByTag[_Gate]):
    """The gates (held answers) and hung calls of one fake, by tag; thread-safe (the drill's
    threads let go, the fake's event loop waits)."""

    def __init__(self) -> None:
        super().__init__()
        self._hung: dict[str, list[_Waiter]] = {}
        self._released: set[str] = set()

    def hold(self, tag: str, max_s: float | None) -> None:
        """Hold the answers of ``tag`` from now on (at most ``max_s`` after each call
        arrived)."""
        with self._lock:
            self._gates[tag] = _Gate(max_s=max_s)

    def let_go(self, tag: str) -> None:
        """Deliver the held answers of ``tag``, now and later (no-op when none is held)."""
        with self._lock:
            gate = self._gates.get(tag)
            if gate is None or gate.open:
                return
            gate.open, waiters, gate.waiters = True, gate.waiters, []
        _wake(waiters)

    def max_s(self, tag: str | None) -> float | None:
        """The backstop of ``tag``'s hold (None: none, or no hold)."""
        with self._lock:
            gate = self._gates.get(tag) if tag else None
            return gate.max_s if gate is not None else None

    def holding(self, tag: str) -> bool:
        """Whether the answers of ``tag`` are still held."""
        with self._lock:
            gate = self._gates.get(tag)
            return gate is not None and not gate.open

    def release(self, tag: str) -> None:
        """Let go of ``tag``'s held answers and release its hung calls, now and later."""
        self.let_go(tag)
        with self._lock:
            self._released.add(tag)
            waiters = self._hung.pop(tag, [])
        _wake(waiters)

    def clear(self) -> None:
        super().clear()
        with self._lock:
            self._released.clear()

    async def wait_gate(self, tag: str | None, receive: Any, arrived: float,
                        now: Callable[[], float]) -> Freed | None:
        """Wait while ``tag`` holds its answers (None: not held). ``arrived``: when the call
        arrived, on the clock ``now()``; the backstop counts from there."""
        event = asyncio.Event()
        with self._lock:
            gate = self._gates.get(tag) if tag else None
            if gate is None or gate.open:
                return None
            gate.waiters.append((asyncio.get_running_loop(), event))
        left = None if gate.max_s is None else max(0.0, arrived + gate.max_s - now())
        if not await set_first(event, receive, left):
            return "left"
        return "drill" if event.is_set() else "backstop"

    async def wait_hung(self, tag: str | None, receive: Any) -> bool:
        """Wait until the caller leaves (False) or the drill releases the tag (True)."""
        event = asyncio.Event()
        with self._lock:
            if tag is not None and tag in self._released:
                return True
            if tag is not None:
                self._hung.setdefault(tag, []).append((asyncio.get_running_loop(), event))
        return await set_first(event, receive)


def _wake(waiters: list[_Waiter]) -> None:
    for loop, event in waiters:
        loop.call_soon_threadsafe(event.set)


async def set_first(event: asyncio.Event, receive: Any, timeout_s: float | None = None) -> bool:
    """Wait for ``event`` (True) or for the caller to leave (False), whichever comes first;
    ``timeout_s`` passing first counts as the event."""
    left = asyncio.ensure_future(_until_disconnect(receive))
    freed = asyncio.ensure_future(event.wait())
    done, pending = await asyncio.wait({left, freed}, timeout=timeout_s,
                                       return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return left not in done


async def wait_or_leave(receive: Any, seconds: float) -> bool:
    """Emulated generation time: True when it passed, False if the caller left first."""
    try:
        await asyncio.wait_for(_until_disconnect(receive), seconds)
    except TimeoutError:
        return True
    return False


@dataclass
class _AfterGate:
    """One tag's answers, one at a time with a look at the job in between."""

    max_s: float | None
    answering: object | None = None  # the call whose answer is going (it went first)
    answered_at: float | None = None  # when the tag's latest answer was delivered
    answered_prompt: str = ""  # what that answer's call asked (recording.prompt_key)
    looked: float = -1.0  # when the latest finished look at the job began
    #: a look that saw the job complete ended since the latest answer was delivered
    seen_complete: bool = False
    open: bool = False  # the intent closed: nothing waits any more
    waiters: list[tuple[float, _Waiter]] = field(default_factory=list)  # (arrived, waiter)

    def may_go(self, arrived: float, prompt: str) -> bool:
        """No other answer is going, and since the latest answer was delivered a look at the
        job ended: one that began after the call arrived, for a call that came after that
        answer (a re-run, a next step); one that saw the job complete, for a call that was
        already waiting and asks the same (two attempts at once: the first answer's result is
        seen before the second can replace it). A call that was waiting and asks something
        else (another step of the job) goes once that answer was delivered."""
        if self.open or self.answered_at is None:
            return self.open or self.answering is None
        if self.answering is not None:
            return False
        if arrived > self.answered_at:
            return self.looked > arrived
        return self.seen_complete or prompt != self.answered_prompt


class AfterAnswer(_ByTag[_AfterGate]):
    """The answers of one tag, at any of the fakes sharing this object (a drill's primary and
    fallbacks), go one at a time, and after the first, each only once a look at the job has
    ended since (:meth:`looked`, :meth:`_AfterGate.may_go`): a re-run's or a redelivered run's
    answer never changes a job's result before the drill saw the one before it. A waiting
    answer also goes when the drill lets the tag go for good, at ``max_s`` after its call
    arrived (the backstop), or not at all when the caller leaves. Thread-safe: the drill's
    threads look and let go, the fakes' event loops wait. Only tags :meth:`arm` named wait."""

    def arm(self, tag: str, max_s: float | None) -> None:
        with self._lock:
            self._gates[tag] = _AfterGate(max_s=max_s)

    def ended(self, tag: str | None, call: object, answered: bool, at: float,
              prompt: str = "") -> None:
        """``call`` of ``tag`` (asking ``prompt``) ended at ``at``, its answer delivered or not:
        the next may go after a look (an answer that went at its backstop counts too)."""
        with self._lock:
            gate = self._gates.get(tag) if tag else None
            if gate is None:
                return
            if gate.answering is call:
                gate.answering = None
            if answered:
                gate.answered_at, gate.answered_prompt, gate.seen_complete = at, prompt, False
            waiters = [w for _, w in gate.waiters]
        _wake(waiters)  # each checks again (a call that left frees the way at once)

    def looked(self, tag: str, began: float, complete: bool = False) -> None:
        """A look at ``tag``'s job that began at ``began`` has ended (``complete``: it saw the
        job complete)."""
        with self._lock:
            gate = self._gates.get(tag)
            if gate is None:
                return
            gate.looked = max(gate.looked, began)
            # complete, as seen after the latest answer went (a look begun before may show an
            # earlier state)
            if complete and (gate.answered_at is None or began >= gate.answered_at):
                gate.seen_complete = True
            waiters = [w for _, w in gate.waiters]
        _wake(waiters)

    def seen_complete(self, tag: str) -> bool:
        """Whether a look saw ``tag``'s job complete since its latest answer was delivered."""
        with self._lock:
            gate = self._gates.get(tag)
            return gate is not None and gate.seen_complete

    def waiting(self, tag: str, timeout_s: float = 0.0) -> bool:
        """Whether an answer of ``tag`` waits for a look (``timeout_s``: until one does)."""
        with self._lock:
            return self._lock.wait_for(lambda: bool(getattr(self._gates.get(tag), "waiters",
                                                            None)), timeout_s)

    def let_go(self, tag: str) -> None:
        """Nothing of ``tag`` waits any more, now and later (its intent closes)."""
        with self._lock:
            gate = self._gates.get(tag)
            if gate is None:
                return
            gate.open, going, gate.waiters = True, [w for _, w in gate.waiters], []
        _wake(going)

    async def wait(self, tag: str | None, call: object, receive: Any, arrived: float,
                   now: Callable[[], float], held_s: float | None = None,
                   prompt: str = "") -> Freed | None:
        """Wait until ``call`` of ``tag`` (arrived at ``arrived``) may answer, and take the turn
        (None: it did not wait; "left": the caller left, no turn taken). ``held_s``: the
        backstop of a hold the call has just come out of, when longer than this one's (a late
        primary the service waits on): the backstop then counts from now, within that."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        waiter = (arrived, (loop, event))
        with self._lock:
            gate = self._gates.get(tag) if tag else None
            if gate is None:
                return None
            if gate.may_go(arrived, prompt):
                gate.answering = None if gate.open else call
                return None
            gate.waiters.append(waiter)
            self._lock.notify_all()
        max_s, deadline = gate.max_s, None
        if max_s is not None:
            deadline = arrived + max_s
            if held_s is not None and held_s > max_s:
                deadline = max(deadline, min(now() + max_s, arrived + held_s))
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - now())
                if not await set_first(event, receive, left):
                    return "left"
                with self._lock:
                    if not event.is_set() or gate.may_go(arrived, prompt):
                        gate.answering = None if gate.open else call
                        return "drill" if event.is_set() else "backstop"
                    event.clear()
        finally:
            with self._lock:
                if waiter in gate.waiters:
                    gate.waiters.remove(waiter)
