"""Explore's entry points: ``explore`` (search real races one step at a time, shrink the first one
found, write a repro folder) and ``replay`` of a repro folder.

Three ways to search: a store's SQL statements under the :class:`Controller` (the default), a
service through its storage behind a holding proxy (``through``: :mod:`harness.explore.serving`),
or free-running threads with no controller (``stress``: checked, not replayable).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.domain.errors import ConfigError, MissingExtra
from harness.domain.shard import Shard
from harness.domain.stream import QUIET, AddTarget, Begin, Folder, Live, ShardEvidence, entry_point
from harness.domain.verdicts import STATUS_WORD
from harness.explore.controller import Controller
from harness.explore.emit import explore_result
from harness.explore.found import Ticker, clean_event, violation_event
from harness.explore.merge import search_evidence, shard_search
from harness.explore.replay import Replayed, replay_repro
from harness.explore.repro import read_repro, write_repro
from harness.explore.search import SearchSettings, search
from harness.explore.serving import replay_through, through_events
from harness.explore.stress import stress
from harness.explore.target import explore_store
from harness.scenarios.events import ReplayComparison
from harness.scenarios.sharding import sharded
from harness.scenarios.targets import open_target

STORE_WORKLOADS = ("double-click", "mismatch", "claims", "timeouts", "all")
SERVICE_WORKLOADS = ("double-click", "mismatch", "handler-failure", "all")
WORKLOADS = ("double-click", "mismatch", "claims", "timeouts", "handler-failure", "all")
CHOICES = ("seeded", "pct", "exhaustive", "hypothesis")
DEFAULT_BUDGET = 500


@dataclass(frozen=True, kw_only=True)
class ThroughSettings:
    """A service, its storage behind a holding proxy (``through``: none for a store)."""

    target: str | None = None
    target_profile: str | None = None
    tokens_file: str | None = None
    through: str | None = None  # redis://… or postgresql://…: the storage the service uses
    listen: str | None = None  # HOST:PORT of the proxy (default: a free loopback port)
    service_cmd: str | None = None  # starts the service ({proxy}: the proxy's URL)
    health_path: str | None = "/healthz"
    settle_ms: float | None = None  # how long to wait before choosing anyway (default 100)


@dataclass(frozen=True, kw_only=True)
class ExploreSettings(ThroughSettings):
    """``failover-harness explore``: what to search, how, and for how long."""

    seed: int
    workload: str = "all"
    clients: int = 3
    budget: int | None = None  # schedules (default 500 unless a time limit is given)
    time_limit: float | None = None  # seconds
    schedule: int = 0  # the first schedule number of the seed
    choices: str = "seeded"
    depth: int = 2  # PCT's bug depth
    commit_steps: bool = False
    shrink: bool = True
    stress: bool = False
    shard: Shard | None = None  # --shard K/N: this job's range of the schedules


@dataclass(frozen=True, kw_only=True)
class ReproReplaySettings(ThroughSettings):
    """``replay`` of a repro folder (the settings override what the repro recorded)."""

    path: Path
    health_path: str | None = None


def search_settings(s: ExploreSettings) -> SearchSettings:
    """The search's settings, or ConfigError naming the option that is wrong."""
    if not 2 <= s.clients <= 16:
        raise ConfigError(f"{s.clients} is out of range", field="--clients",
                          fix="use 2 to 16 clients")
    if s.budget is not None and s.budget < 1:
        raise ConfigError(f"{s.budget} schedules explore nothing", field="--budget",
                          fix="give at least 1 schedule")
    if s.time_limit is not None and s.time_limit <= 0:
        raise ConfigError(f"{s.time_limit:g} is not a duration",
                          field="--time-limit", fix="give a number of seconds above 0")
    if s.schedule < 0:
        raise ConfigError(f"{s.schedule} is not a schedule number", field="--schedule",
                          fix="schedules are numbered from 0")
    _no_controller(s)
    if s.choices == "hypothesis":
        _need_hypothesis()
    if not 1 <= s.depth <= 5:
        raise ConfigError(f"depth {s.depth} is out of range", field="--depth",
                          fix="use 1 to 5 (2: one preemption, the common race)")
    usable = SERVICE_WORKLOADS if s.through else STORE_WORKLOADS
    if not s.stress and s.workload not in usable:
        what = "a service explored through its storage" if s.through else "a store"
        raise ConfigError(f"workload {s.workload!r} does not apply to {what}",
                          field="--workload", fix=f"use one of: {', '.join(usable)}")
    budget = s.budget if s.budget is not None or s.time_limit else DEFAULT_BUDGET
    whole = SearchSettings(workload=s.workload, clients=s.clients, budget=budget,
                           time_limit=s.time_limit, seed=s.seed, choices=s.choices,
                           first=s.schedule, depth=s.depth)
    return whole if s.shard is None else shard_search(whole, s.shard, stress=s.stress)


def _no_controller(s: ExploreSettings) -> None:
    """Options that need a controller (not --stress) or our store's statements (not a service
    explored through its storage)."""
    if s.stress and s.commit_steps:
        raise ConfigError("--stress has no controller, so there are no steps to split",
                          field="--commit-steps", fix="drop --commit-steps, or drop --stress")
    if s.stress and s.choices != "seeded":
        raise ConfigError(f"--stress has no controller, so {s.choices} choices cannot "
                          "apply", field="--choices", fix="drop --choices, or drop --stress")
    if s.through and (s.stress or s.commit_steps):
        flag = "--stress" if s.stress else "--commit-steps"
        raise ConfigError(f"{flag} does not apply to a service explored through its storage",
                          field=flag, fix=f"drop {flag}")


def _need_hypothesis() -> None:
    """``choices="hypothesis"`` is the one explore path that needs the ``explore`` extra (the
    seeded, PCT and exhaustive searches and the shrinker run without it): say so up front."""
    if importlib.util.find_spec("hypothesis") is None:
        raise MissingExtra("explore", module="hypothesis",
                           purpose="explore --choices hypothesis (Hypothesis draws the schedules; "
                           "--choices seeded, pct and exhaustive need no extra)")


@entry_point
def run_explore(settings: ExploreSettings, *, folder: Folder,
                live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness explore``: one explore result (and the repro folder of a violation)."""
    search_with = search_settings(settings)
    yield Begin()
    if settings.shard is not None:
        files = [settings.target_profile or "", settings.tokens_file or ""]
        yield sharded("explore", settings.shard, settings, files)
    live.say(f"explore: seed {settings.seed}" + (
        f"; shard {settings.shard}: schedules {search_with.first} to "
        f"{search_with.first + (search_with.budget or 0) - 1}" if settings.shard else ""))
    if settings.through:
        yield from through_events(settings, search_with, folder, live)
    elif settings.stress:
        yield from _stress(settings, search_with, folder, live)
    else:
        yield from _store(settings, search_with, folder, live)


def _limit(s: SearchSettings, unit: str) -> str:
    return f"{s.budget} {unit}" if s.budget is not None else f"{s.time_limit:g} s"


def _store(s: ExploreSettings, search_with: SearchSettings, folder: Folder,
           live: Live) -> Iterator[Any]:
    with explore_store(s.target) as (store, target):
        yield AddTarget(target)
        live.say(f"target {target}; workload {search_with.workload}; clients ≤ "
                 f"{search_with.clients}; budget {_limit(search_with, 'schedules')}; "
                 f"{search_with.choices} choices")
        with Controller(store, commit_steps=s.commit_steps) as controller:
            ticker = Ticker(live.say, search_with.budget)
            found = search(controller, search_with, ticker)
            ticker.final()
            if found.outcome is None:
                yield clean_event(found, search_with, target)
            else:
                yield violation_event(controller, found, search_with, target, folder=folder,
                                      say=live.say, shrinking=s.shrink,
                                      commit_steps=s.commit_steps)
            if s.shard is not None:
                yield ShardEvidence(search_evidence(found, search_with))


def _stress(s: ExploreSettings, search_with: SearchSettings, folder: Folder,
            live: Live) -> Iterator[Any]:
    target = open_target(s.target, tokens_file=s.tokens_file)
    yield AddTarget(target.description)
    try:
        live.say(f"stress: target {target.description}; workload {search_with.workload}; "
                 f"clients ≤ {search_with.clients}; {_limit(search_with, 'rounds')}; "
                 "free-running threads (not replayable)")
        ticker = Ticker(live.say)
        found = stress(target, search_with, ticker)
        ticker.final()
    finally:
        target.close()
    if found.outcome is None:
        yield explore_result(
            None, target=target.description, settings=search_with, found=found, mode="stress",
            note="\n".join([f"no violation in {found.progress.schedules} rounds",
                            *found.progress.tally.lines("rounds")]))
        return
    repro = write_repro(found.outcome, folder(), target=target.description,
                        found={"workload": search_with.workload, "seed": search_with.seed,
                               "schedule": found.schedule, "choices": "stress",
                               "schedules": found.progress.schedules},
                        replayable=False)
    yield explore_result(found.outcome, target=target.description, settings=search_with,
                         found=found, mode="stress", repro=repro)


@entry_point
def run_repro_replay(settings: ReproReplaySettings, *, folder: Folder,
                     live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness replay <explore repro>``: the same events and history, or where not."""
    repro = read_repro(settings.path)
    if repro.through is not None or settings.through:
        yield Begin()
        replayed, target = yield from replay_through(settings, repro, folder, live)
    else:
        text = settings.target or repro.target
        if text and "***" in text and not settings.target:
            raise ConfigError("the repro's target URL had its password removed",
                              field="--target",
                              fix="pass --target with the full URL (or set PGPASSWORD)")
        yield Begin()
        with explore_store(text) as (store, target):
            yield AddTarget(target)
            live.say(f"replaying {settings.path} on {target} ({len(repro.decisions)} recorded "
                     "decisions)")
            with Controller(store, commit_steps=repro.commit_steps) as controller:
                replayed = replay_repro(controller, repro)
    yield from _replayed(settings.path, replayed, target)


def _replayed(path: Path, replayed: Replayed, target: str) -> Iterator[Any]:
    outcome = replayed.outcome
    as_recorded = SearchSettings(workload=outcome.plan.workload, seed=0, choices="replay")
    yield explore_result(outcome, target=target, settings=as_recorded, mode="replay")
    what = "schedule and history" if replayed.compared else "schedule"
    if replayed.divergence is not None:
        yield ReplayComparison(
            str(path), target, False, "fail", compared=what, completed=False,
            divergence=replayed.divergence,
            note=f"following the recording where it still could, the verdict is now "
                 f"{STATUS_WORD[outcome.status]}", ops=len(outcome.history))
    else:
        yield ReplayComparison(str(path), target, True, "pass", compared=what,
                               ops=len(outcome.history), events=len(outcome.schedule))
