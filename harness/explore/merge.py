"""Explore over shards: shard K of N searches a contiguous range of the seed's schedules, and
``merge`` gives what one search over the whole range gives.

Seeded schedule *n* of seed *S* draws everything from ``Random("S:n")``, so schedules are
independent: shard K of N of ``--budget B --schedule F`` runs schedules ``F + r`` for ``r`` in
its :meth:`~harness.domain.shard.Shard.range` of ``B``, stopping at its first violation, as one
search stops at its first. One search over the whole range stops at the lowest violating
schedule; the merge therefore takes the first shard (in range order) that found one, after
every earlier shard's schedules, and a clean merge judges every shard's tally together. Only the
seeded search is split: PCT carries what it learns from one schedule to the next, exhaustive
search walks one tree, Hypothesis draws its own examples, a time limit is no range.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.domain.errors import ConfigError
from harness.domain.shard import Shard
from harness.explore.events import ExploreResult
from harness.explore.evidence import Tally
from harness.explore.found import clean_event
from harness.explore.search import Found, Progress, SearchSettings


def shard_search(settings: SearchSettings, shard: Shard, *, stress: bool) -> SearchSettings:
    """The search of ``shard``: its range of the schedules, or ConfigError for a search that
    cannot be split."""
    why = ("--stress runs free threads, not numbered schedules" if stress else
           "--time-limit is no range of schedules: give --budget" if settings.time_limit
           else f"--choices {settings.choices} cannot be split: PCT carries what it learns "
                "from one schedule to the next, exhaustive search walks one tree, Hypothesis "
                "draws its own examples" if settings.choices != "seeded" else "")
    if why:
        raise ConfigError(why, field="--shard", fix="shard a seeded search with a --budget "
                          "(the default), or run this search whole")
    budget = settings.budget or 0
    if budget < shard.total:
        raise ConfigError(f"{budget} schedules cannot be split into {shard.total} shards",
                          field="--budget", fix=f"give at least {shard.total} schedules")
    part = shard.range(budget)
    return replace(settings, first=settings.first + part.start, budget=len(part))


def tally_json(tally: Tally) -> dict[str, Any]:
    return {"schedules": tally.schedules, "unknown": tally.unknown, "idle": tally.idle,
            "checked": dict(tally.checked), "exercised": dict(tally.exercised),
            "needs": dict(tally.needs), "promises": dict(tally.promises),
            "unknown_in": dict(tally.unknown_in),
            "reasons": {k: dict(v) for k, v in tally.reasons.items()},
            "fixes": {k: list(v) for k, v in tally.fixes.items()}}


def absorb(tally: Tally, data: Mapping[str, Any]) -> None:
    """Add a shard's tally (``tally_json``) to ``tally``: what one search over both ranges
    would have counted, in the order it would have seen it."""
    tally.schedules += int(data["schedules"])
    tally.unknown += int(data["unknown"])
    tally.idle += int(data["idle"])
    tally.checked.update(data["checked"])
    tally.exercised.update(data["exercised"])
    tally.unknown_in.update(data["unknown_in"])
    for name, need in data["needs"].items():
        tally.needs.setdefault(name, need)
    for name, promise in data["promises"].items():
        tally.promises.setdefault(name, promise)
    for name, reasons in data["reasons"].items():
        tally.reasons.setdefault(name, Counter()).update(reasons)
    for name, fixes in data["fixes"].items():
        mine = tally.fixes.setdefault(name, [])
        mine.extend(f for f in fixes if f not in mine)


def search_evidence(found: Found, settings: SearchSettings) -> dict[str, Any]:
    """What a shard records beside its explore result, for :func:`merge_searches`."""
    progress = found.progress
    return {"kind": "explore", "first": settings.first, "budget": settings.budget,
            "schedules": progress.schedules, "steps": progress.steps,
            "violated": found.outcome is not None, "tally": tally_json(progress.tally)}


def merge_searches(parts: Sequence[tuple[ExploreResult, Mapping[str, Any]]]) -> ExploreResult:
    """One search from its shards' (in range order): the first violation after every earlier
    shard's schedules, else a clean search over every shard's tally."""
    parts = sorted(parts, key=lambda p: int(p[1]["first"]))
    schedules = steps = 0
    wall = 0.0
    tally = Tally()
    for event, evidence in parts:
        schedules += int(evidence["schedules"])
        steps += int(evidence["steps"])
        wall += event.wall_s
        if evidence["violated"]:
            return replace(event, schedules_tried=schedules, steps_tried=steps, wall_s=wall)
        absorb(tally, evidence["tally"])
    head = parts[0][0]
    progress = Progress(schedules=schedules, steps=steps, tally=tally)
    settings = SearchSettings(workload=head.workload, seed=head.seed, choices=head.choices,
                              budget=sum(int(e["budget"]) for _, e in parts))
    return replace(clean_event(Found(None, progress), settings, head.target), wall_s=wall)
