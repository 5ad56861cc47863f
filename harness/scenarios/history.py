"""The history: every operation as invoke → ok | fail | info, in order, as JSON lines.

``ok`` and ``fail`` are definite answers; ``info`` is indeterminate (no answer: the request may or
may not have taken effect), like Jepsen's. Values name jobs and attempts by the scenario's names
(aliases), never by the target's ids, so the same seed on the same kind of target writes the same
bytes. ``time`` is virtual seconds since the start; ``wall`` is the clock the target saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.domain.errors import ConfigError
from harness.domain.redaction import redact

OpType = Literal["invoke", "ok", "fail", "info"]
OP_TYPES = ("invoke", "ok", "fail", "info")
#: a value printed bare in a history line: a name, a number, a code (anything else is quoted)
_BARE = re.compile(r"[\w.:/@+-]*")
TEXT_LIMIT = 60


def shown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """A string as a history line shows it: bare when it is a plain token, else JSON-quoted
    (newlines, quotes and control characters escaped, so markup or a multi-line body never
    breaks the line) and shortened to ``limit`` characters with an ellipsis."""
    if _BARE.fullmatch(text) and len(text) <= limit:
        return text
    short = text if len(text) <= limit else text[:limit - 1] + "…"
    return json.dumps(short, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Op:
    """One history entry."""

    index: int
    time: float
    wall: str
    process: str
    type: OpType
    f: str
    value: dict[str, Any]

    def to_line(self) -> str:
        """The canonical JSON line (fixed field order, sorted value keys)."""
        value = json.dumps(self.value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        head = json.dumps(
            {"index": self.index, "time": self.time, "wall": self.wall,
             "process": self.process, "type": self.type, "f": self.f},
            separators=(",", ":"), ensure_ascii=False,
        )
        return f"{head[:-1]},\"value\":{value}}}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Op:
        return cls(
            index=int(data["index"]), time=float(data["time"]), wall=str(data["wall"]),
            process=str(data["process"]), type=data["type"], f=str(data["f"]),
            value=dict(data.get("value") or {}),
        )


@dataclass
class History:
    """An append-only history; ``now`` gives (virtual seconds, wall-clock text) for new ops."""

    now: Callable[[], tuple[float, str]]
    ops: list[Op] = field(default_factory=list)

    def invoke(self, process: str, f: str, value: dict[str, Any]) -> Op:
        return self._add(process, "invoke", f, value)

    def complete(self, invoke: Op, type_: OpType, value: dict[str, Any]) -> Op:
        if type_ == "invoke":
            raise ValueError("a completion is ok, fail or info")
        return self._add(invoke.process, type_, invoke.f, value)

    def _add(self, process: str, type_: OpType, f: str, value: dict[str, Any]) -> Op:
        time, wall = self.now()
        op = Op(len(self.ops), time, wall, process, type_, f, value)
        self.ops.append(op)
        return op

    def observe_side_effects(self, moment: str, count: int | None, *, why: str = "") -> None:
        """The target's side-effect counter read at ``moment`` (start | end), as an observer op:
        the one way the scenario runner and explore record it (the checkers read it). ``None``:
        it could not be read then (``why``), a failed op."""
        invoke = self.invoke("observer", "side_effects", {"at": moment})
        if count is None:
            self.complete(invoke, "fail", {"error": why})
        else:
            self.complete(invoke, "ok", {"count": count})

    def lines(self) -> Iterator[str]:
        for op in self.ops:
            yield op.to_line()


def write_jsonl(path: Path, lines: Iterable[str]) -> None:
    """Write lines with a trailing newline each (UTF-8, LF), every registered secret removed
    (a service may echo one into an answer the history keeps)."""
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(redact(line))
            out.write("\n")


def read_history(path: Path) -> list[Op]:
    """Read a ``history.jsonl`` written by :func:`write_jsonl`."""
    ops = []
    with path.open(encoding="utf-8") as source:
        for n, line in enumerate(source, 1):
            if line.strip():
                try:
                    ops.append(Op.from_json(json.loads(line)))
                except (ValueError, KeyError, TypeError) as exc:
                    raise ConfigError(
                        f"not a history line: {exc}", file=str(path), line=n,
                        fix="point at a history.jsonl written by failover-harness",
                    ) from None
    return ops


@dataclass(frozen=True, slots=True)
class Pair:
    """An invocation and its completion (None while it never completed)."""

    invoke: Op
    completion: Op | None

    @property
    def type(self) -> str:
        return self.completion.type if self.completion else "info"

    @property
    def value(self) -> dict[str, Any]:
        return self.completion.value if self.completion else {}

    @property
    def indices(self) -> list[int]:
        return [self.invoke.index] + ([self.completion.index] if self.completion else [])


def pairs(ops: Iterable[Op]) -> list[Pair]:
    """Match each invocation with the next completion of the same process, in invoke order."""
    open_: dict[str, Op] = {}
    done: dict[int, Op] = {}
    order: list[Op] = []
    for op in ops:
        if op.type == "invoke":
            open_[op.process] = op
            order.append(op)
        else:
            inv = open_.pop(op.process, None)
            if inv is not None:
                done[inv.index] = op
    return [Pair(inv, done.get(inv.index)) for inv in order]
