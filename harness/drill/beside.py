"""Both halves of ``check --target`` in one run: the scenarios and the drill at the same time.

The two never meet in the service's key space: the drill's keys are fresh per intent
(``{key}``: ``drill-key-<uuid>``), the scenarios' are prefixed with their run's id, and every
provider call of the drill carries its intent's tag while the scenarios' carry none. So the drills
run on a thread of their own while the scenarios play on the caller's, and the provider calls the
scenarios cause are their side effects (:meth:`ProfileTarget.count_provider_calls`: one call to a
primary per handler run, for a profile that names no counter). A drill whose submit sends one
fixed key (no ``{key}``) runs after the scenarios instead: its intents would share that key.

No argparse, no report session of its own: the caller hands in the scenarios' part (a callable,
or a stream of their events: :func:`beside`) and gets the drill's results back, to emit with the
scenarios' events in one report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from harness.drill.engine import DrillResults, Engine
from harness.scenarios.targets.base import Target
from harness.target.drill_profile import DrillProfile
from harness.target.drill_section import KEY_MARK

T = TypeVar("T")


def separate_key_spaces(profile: DrillProfile) -> bool:
    """Do the drill's intents stay out of the scenarios' key space: each sends a fresh key
    (``{key}``), or none at all?"""
    submit = profile.section.submit
    keyed = [v for k, v in submit.headers.items() if "idempotency" in k.lower()]
    return all(KEY_MARK in v for v in keyed)


def count_provider_calls(target: Target, engine: Engine) -> bool:
    """Make the drill's fakes the target's side-effect counter (a call to a primary provider is
    one handler run), when its profile names none; True if so."""
    attach = getattr(target, "count_provider_calls", None)
    primaries = [s.fake for s in engine.served if s.upstream.role == "primary"]
    return bool(attach is not None and attach(primaries, [s.fake for s in engine.served]))


def run_beside(engine: Engine, scenarios: Callable[[], None], *, drills: Sequence[str],
               trials: int) -> DrillResults:
    """Run ``drills`` (``trials`` intents each) on a thread while ``scenarios()`` runs on this
    one — or after it, when the drill's keys are not its own — and return the drill's results
    once both have ended. An exception of either is raised here (the scenarios' first)."""

    def called() -> Iterator[Any]:
        scenarios()
        yield from ()

    stream = beside(engine, called(), drills=drills, trials=trials)
    while True:
        try:
            next(stream)
        except StopIteration as done:
            results: DrillResults = done.value
            return results


def beside(engine: Engine, scenarios: Iterator[T], *, drills: Sequence[str],
           trials: int) -> Generator[T, None, DrillResults]:
    """:func:`run_beside` for a stream: yields what ``scenarios`` yields, as it comes (on the
    caller's thread, while the drill runs on its own), and returns the drill's results."""
    if not separate_key_spaces(engine.profile):
        yield from scenarios
        return engine.run(list(drills), trials)
    out: dict[str, Any] = {}

    def drill() -> None:
        try:
            out["results"] = engine.run(list(drills), trials)
        except BaseException as exc:  # handed to the caller's thread below
            out["error"] = exc

    thread = threading.Thread(target=drill, name="check-drill", daemon=True)
    thread.start()
    try:
        yield from scenarios
    except BaseException:  # also a stream closed before its end (GeneratorExit)
        engine.stop.set()  # the drill's intents stop watching at their next look
        raise
    finally:
        thread.join()
    if "error" in out:
        raise out["error"]
    results: DrillResults = out["results"]
    return results
