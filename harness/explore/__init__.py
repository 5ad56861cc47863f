"""Explore: find, shrink and replay real database races, one SQL statement at a time.

::

    workload ──draw──▶ Plan ──Controller──▶ Outcome (history, schedule) ──checkers──▶ verdict
                           │     ▲   one Worker (thread + session) per client; every
                           │     │   statement waits at a gate for the controller's grant
                           │   choice source: SwarmChoices (seeded) | PrefixChoices (exhaustive)
                           │                | HypothesisChoices | RecordedChoices (replay)
                           ▼
          violation ──shrink──▶ smallest Outcome ──write_repro──▶ reports/repro/<id>/
                                                                 └─ failover-harness replay

Modules: ``plan`` (the data a schedule runs), ``workloads`` (double-click, mismatch, claims,
timeouts), ``gate`` (workers and gated connections), ``sessions`` (attaching to a store,
lock-wait probes), ``ops`` (operations → history), ``controller`` (one schedule), ``choices``,
``search`` (the budgeted loop), ``shrink``, ``repro`` / ``explain`` / ``replay``, ``stress``
(free-running), ``property`` (inside your own Hypothesis tests), ``target`` (``--target``).
"""

from harness.explore.choices import (
    GuidedChoices,
    HypothesisChoices,
    HypothesisDraw,
    PrefixChoices,
    RecordedChoices,
    SwarmChoices,
    next_prefix,
)
from harness.explore.controller import Controller, ExploreStuck, Outcome
from harness.explore.plan import OpSpec, Plan, RandomDraw, SmallestDraw, TimerSpec
from harness.explore.property import RaceFound, explore_schedule
from harness.explore.replay import Replayed, replay_repro
from harness.explore.repro import Repro, is_explore_repro, read_repro, write_repro
from harness.explore.search import Found, Settings, search
from harness.explore.shrink import Shrunk, shrink
from harness.explore.stress import run_free, stress
from harness.explore.target import explore_store
from harness.explore.workloads import WORKLOADS, build_plan

__all__ = [
    "WORKLOADS",
    "Controller",
    "ExploreStuck",
    "Found",
    "GuidedChoices",
    "HypothesisChoices",
    "HypothesisDraw",
    "OpSpec",
    "Outcome",
    "Plan",
    "PrefixChoices",
    "RaceFound",
    "RandomDraw",
    "RecordedChoices",
    "Replayed",
    "Repro",
    "Settings",
    "Shrunk",
    "SmallestDraw",
    "SwarmChoices",
    "TimerSpec",
    "build_plan",
    "explore_schedule",
    "explore_store",
    "is_explore_repro",
    "next_prefix",
    "read_repro",
    "replay_repro",
    "run_free",
    "search",
    "shrink",
    "stress",
    "write_repro",
]
