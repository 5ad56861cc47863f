"""A concurrent group of one step: its copies sent on threads released together (at their
planned offsets, :mod:`harness.scenarios.arrivals`), each answer judged, and the copies written
to the history in a canonical order (identical requests are interchangeable, whichever thread
ran first), with when each copy was planned, sent and answered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.scenarios import arrivals
from harness.scenarios.history import History, OpType
from harness.scenarios.targets.base import Reply
from harness.scenarios.values import canonical_value, op_type

_RANK = {"ok": 0, "fail": 1, "info": 2}
Judge = Callable[[Reply], tuple[OpType, dict[str, Any]]]


def record_group(history: History, process: str, f: str,
                 copies: Sequence[tuple[dict[str, Any], Callable[[], Reply]]],
                 offsets_s: Sequence[float], judge: Judge,
                 name_first: Callable[[Reply], None] | None = None,
                 times: dict[str, Any] | None = None) -> list[Reply]:
    """Send ``copies`` (per copy: its invoke value and its call) at ``offsets_s``, record them as
    ``process/1`` … ``process/N`` and return their replies in that order. ``name_first`` sees
    the best reply before any is judged; ``times`` (the group's plan, when it has one) gets
    ``planned_ms``, ``sent_ms``, ``answered_ms`` (ms after the release, in that order) and
    ``together``: evidence that the copies were in flight together."""
    n = len(copies)
    replies, sent, answered = arrivals.send_copies(lambda i: copies[i][1](), offsets_s)
    first = min(range(n), key=lambda i: (_RANK[op_type(replies[i])], -replies[i].status,
                                         replies[i].code))
    if name_first and replies[first].ok:
        name_first(replies[first])  # before judging: the job gets the scenario's name
    values = [canonical_value(v) for v, _ in copies]
    judged = [judge(r) for r in replies]
    order = sorted(range(n), key=lambda i: (values[i], _RANK[judged[i][0]],
                                            not judged[i][1].get("created"),
                                            canonical_value(judged[i][1]), -replies[i].status,
                                            replies[i].code))
    invokes = [history.invoke(f"{process}/{k + 1}", f, copies[i][0])
               for k, i in enumerate(order)]
    for invoke, i in zip(invokes, order, strict=True):
        history.complete(invoke, *judged[i])
    if times is not None:
        ms = {name: [round(values_s[i] * 1000, 3) for i in order]
              for name, values_s in (("planned_ms", offsets_s), ("sent_ms", sent),
                                     ("answered_ms", answered))}
        times.update(ms, together=arrivals.in_flight_together(ms["sent_ms"],
                                                               ms["answered_ms"]))
    return [replies[i] for i in order]
