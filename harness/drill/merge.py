"""Drills over shards: shard K of N drills the (drill, trial) intents it owns, and ``merge``
judges every shard's intents together, as one run judges its own.

The intents of a run are drill-major positions (drill *d*, trial *t* is ``d × trials + t - 1``)
dealt round-robin (:meth:`~harness.domain.shard.Shard.owns`). A shard records each drill's
intents beside its event (:func:`drill_evidence`); :func:`merge_drills` judges the records of
every shard with the function one run uses (:func:`harness.drill.summary.drill_run`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from harness.domain.published import engine_words, published
from harness.domain.shard import Shard
from harness.drill.events import DrillRun
from harness.drill.summary import DrillHead, IntentRecord, drill_run


def intent_owner(shard: Shard | None, drills: Sequence[str],
                 trials: int) -> Callable[[str, int], bool] | None:
    """Whether ``shard`` drills trial *t* (1-based) of a drill (None: every intent)."""
    if shard is None:
        return None
    return lambda name, trial: shard.owns(list(drills).index(name) * trials + trial - 1)


def drill_evidence(head: DrillHead, records: Sequence[IntentRecord]) -> dict[str, Any]:
    """What a shard records beside a drill's event, for :func:`merge_drills`."""
    return {"kind": "drill", "head": asdict(head),
            "records": [published(r) for r in records]}


@cache
def _records() -> TypeAdapter[list[IntentRecord]]:
    return TypeAdapter(list[IntentRecord])


def merge_drills(parts: Sequence[tuple[DrillRun, Mapping[str, Any]]]) -> DrillRun:
    """One drill's event from its shards' intents."""
    head = TypeAdapter(DrillHead).validate_python(parts[0][1]["head"])
    intents = [r for _, evidence in parts for r in _records().validate_python(
        engine_words(list[IntentRecord], evidence["records"]))]
    return drill_run(head, intents, shard_order=True)
