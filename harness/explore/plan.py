"""A plan: the operations one explored schedule runs (setup, racing clients, timers, epilogue).

A workload draws a plan (``Draw``: seeded random, Hypothesis, or the smallest choice); the
controller interleaves the plan's racing clients statement by statement. The plan is plain data:
it is written into the repro folder and read back by ``replay``, so a replay needs no randomness.

::

    setup      ops run one after another before the race (not interleaved, not steps)
    clients    client name → the ops it runs from virtual time 0, in order
    timers     at virtual time T, append ops to a client's queue (a provider's reply, a timeout)
    epilogue   ops run one after another once every client is done (reads for the checkers)

Names: an op with ``save`` names the job (create) or attempt (start) it got; later ops refer to
it by that name. ``@own`` is the job this client's own last create returned.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Protocol

from harness.domain import Intent
from harness.domain.errors import ConfigError, HarnessError
from harness.scenarios.checkers import CHECKERS

OP_KINDS = ("create", "read", "attempts", "races", "start",
            "dispatched", "timed_out", "succeeded", "failed", "cancelled", "fault")
EVENT_KINDS = ("dispatched", "timed_out", "succeeded", "failed", "cancelled")
OWN = "@own"


class Draw(Protocol):
    """Where a workload's decisions come from (seeded random, Hypothesis, the smallest)."""
    def integer(self, lo: int, hi: int) -> int: ...
    def boolean(self) -> bool: ...


class RandomDraw:
    """Draws from a seeded :class:`random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5


class SmallestDraw:
    """Always the smallest choice: the workload's minimal plan (for exhaustive search)."""

    def integer(self, lo: int, hi: int) -> int:
        return lo

    def boolean(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One operation of API.md, as a client sends it."""

    f: str
    process: str
    owner: str = "alice"
    key: str | None = None
    intent: str | None = None
    job: str | None = None
    attempt: str | None = None
    provider: str | None = None
    save: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Any, where: str) -> OpSpec:
        if not isinstance(data, dict) or data.get("f") not in OP_KINDS or "process" not in data:
            raise ConfigError(f"not an operation: {data!r}", field=where,
                              fix=f"write {{f: <one of {', '.join(OP_KINDS)}>, process: …}}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown field {unknown[0]!r}", field=where,
                              fix=f"use only: {', '.join(sorted(known))}")
        return cls(**data)

    def describe(self) -> str:
        """The op in a few words: ``create k1``, ``succeeded A``, ``read job``."""
        subject = self.key if self.f == "create" else self.attempt or self.job or ""
        if self.f == "start":
            subject = f"{self.save} on {self.job}"
        who = f" as {self.owner}" if self.owner != "alice" else ""
        return f"{self.f} {subject}{who}".strip()


@dataclass(frozen=True, slots=True)
class TimerSpec:
    """At virtual time ``at``, append ``ops`` to ``client``'s queue."""

    at: float
    client: str
    what: str
    ops: tuple[OpSpec, ...]

    @property
    def label(self) -> str:
        return f"timer @{self.at:g}s {self.what}"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "client": self.client, "what": self.what,
                "ops": [op.to_json() for op in self.ops]}


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything one schedule runs; see the module docstring."""

    workload: str
    intents: dict[str, dict[str, Any]]
    setup: tuple[OpSpec, ...]
    clients: dict[str, tuple[OpSpec, ...]]
    timers: tuple[TimerSpec, ...]
    epilogue: tuple[OpSpec, ...]
    checkers: tuple[str, ...]

    def racing_clients(self) -> list[str]:
        """Every client that runs during the race, sorted (each gets its own session)."""
        names = set(self.clients) | {t.client for t in self.timers}
        return sorted(names)

    def intent_text(self, name: str) -> str:
        return json.dumps(self.intents[name], sort_keys=True, separators=(",", ":"))

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "intents": self.intents,
            "setup": [op.to_json() for op in self.setup],
            "clients": {name: [op.to_json() for op in ops] for name, ops in self.clients.items()},
            "timers": [t.to_json() for t in self.timers],
            "epilogue": [op.to_json() for op in self.epilogue],
            "checkers": list(self.checkers),
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "plan") -> Plan:
        """Read a plan back; a damaged one is a :class:`ConfigError` naming the field."""

        if not isinstance(data, dict):
            raise ConfigError("the plan is not a mapping", field=where,
                              fix="restore the file as explore wrote it")
        try:
            intents = dict(data["intents"])
            for name, body in intents.items():
                try:
                    Intent.from_json(body)
                except HarnessError as exc:
                    raise ConfigError(f"intent {name!r} is not valid: {exc.message}",
                                      field=f"{where}.intents.{name}",
                                      fix="restore the file as explore wrote it") from None
            plan = cls(
                workload=str(data["workload"]),
                intents=intents,
                setup=tuple(OpSpec.from_json(op, f"{where}.setup.{i}")
                            for i, op in enumerate(data.get("setup") or ())),
                clients={str(name): tuple(OpSpec.from_json(op, f"{where}.clients.{name}.{i}")
                                          for i, op in enumerate(ops))
                         for name, ops in (data.get("clients") or {}).items()},
                timers=tuple(
                    TimerSpec(float(t["at"]), str(t["client"]), str(t["what"]),
                              tuple(OpSpec.from_json(op, f"{where}.timers.{n}.ops.{i}")
                                    for i, op in enumerate(t["ops"])))
                    for n, t in enumerate(data.get("timers") or ())),
                epilogue=tuple(OpSpec.from_json(op, f"{where}.epilogue.{i}")
                               for i, op in enumerate(data.get("epilogue") or ())),
                checkers=tuple(str(c) for c in data["checkers"]),
            )
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"the plan is damaged: {type(exc).__name__}: {exc}", field=where,
                              fix="restore the file as explore wrote it") from None
        unknown = [c for c in plan.checkers if c not in CHECKERS]
        if unknown:
            raise ConfigError(f"unknown checker {unknown[0]!r}", field=f"{where}.checkers",
                              fix=f"use checkers from: {', '.join(sorted(CHECKERS))}")
        for op in plan.all_ops():
            if op.intent is not None and op.intent not in plan.intents:
                raise ConfigError(f"op {op.describe()!r} names intent {op.intent!r}, which the "
                                  "plan does not define", field=f"{where}.intents",
                                  fix="add the intent or correct the name")
        return plan

    def all_ops(self) -> Iterator[OpSpec]:
        yield from self.setup
        for ops in self.clients.values():
            yield from ops
        for timer in self.timers:
            yield from timer.ops
        yield from self.epilogue

    # -- shrinking: a plan as a list of removable ops ------------------------------------------
    def units(self) -> list[tuple[str, int, int]]:
        """Every op as ``(part, group, index)``; :meth:`keeping` builds a plan from a subset."""
        found: list[tuple[str, int, int]] = [("setup", 0, i) for i in range(len(self.setup))]
        for g, name in enumerate(sorted(self.clients)):
            found += [("clients", g, i) for i in range(len(self.clients[name]))]
        for g, timer in enumerate(self.timers):
            found += [("timers", g, i) for i in range(len(timer.ops))]
        found += [("epilogue", 0, i) for i in range(len(self.epilogue))]
        return found

    def keeping(self, kept: set[tuple[str, int, int]]) -> Plan:
        """This plan with only the ops in ``kept`` (timers and clients left empty vanish)."""
        names = sorted(self.clients)
        clients = {}
        for g, name in enumerate(names):
            ops = tuple(op for i, op in enumerate(self.clients[name]) if ("clients", g, i) in kept)
            if ops:
                clients[name] = ops
        timers = []
        for g, timer in enumerate(self.timers):
            ops = tuple(op for i, op in enumerate(timer.ops) if ("timers", g, i) in kept)
            if ops:
                timers.append(replace(timer, ops=ops))
        return replace(
            self,
            setup=tuple(op for i, op in enumerate(self.setup) if ("setup", 0, i) in kept),
            clients=clients,
            timers=tuple(timers),
            epilogue=tuple(op for i, op in enumerate(self.epilogue) if ("epilogue", 0, i) in kept),
        )

    def size(self) -> int:
        return len(self.units())
