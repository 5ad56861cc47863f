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
``pct`` (probabilistic concurrency testing), ``search`` (the budgeted loop), ``shrink``,
``repro`` / ``explain`` / ``replay``, ``stress`` (free-running), ``property`` (inside your own
Hypothesis tests), ``target`` (``--target``).

A service through its storage (``explore --through``)::

    explore ──HTTP──▶ service ──▶ Proxy (proxy, redis_wire, pg_wire) ──▶ Redis / PostgreSQL
                                    │ each step held until granted
    ThroughController (through) ◀───┘ HTTP workloads (http_workloads), in-progress retries
                                      parked (http_session); service start, health (service)
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
from harness.explore.controller import Controller, ExploreStuck, Outcome, Runner
from harness.explore.http_workloads import HTTP_WORKLOADS, http_builder
from harness.explore.pct import PctChoices, bound
from harness.explore.plan import OpSpec, Plan, RandomDraw, SmallestDraw, TimerSpec
from harness.explore.property import RaceFound, explore_schedule
from harness.explore.proxy import OpenGate, Problem, Proxy, Step, Upstream
from harness.explore.replay import Replayed, replay_repro
from harness.explore.repro import Repro, is_explore_repro, read_repro, write_repro
from harness.explore.search import Found, Settings, search
from harness.explore.shrink import Shrunk, shrink
from harness.explore.stress import run_free, stress
from harness.explore.target import explore_store
from harness.explore.through import ThroughController
from harness.explore.workloads import WORKLOADS, build_plan

__all__ = [
    "HTTP_WORKLOADS",
    "WORKLOADS",
    "Controller",
    "ExploreStuck",
    "Found",
    "GuidedChoices",
    "HypothesisChoices",
    "HypothesisDraw",
    "OpSpec",
    "OpenGate",
    "Outcome",
    "PctChoices",
    "Plan",
    "PrefixChoices",
    "Problem",
    "Proxy",
    "RaceFound",
    "RandomDraw",
    "RecordedChoices",
    "Replayed",
    "Repro",
    "Runner",
    "Settings",
    "Shrunk",
    "SmallestDraw",
    "Step",
    "SwarmChoices",
    "ThroughController",
    "TimerSpec",
    "Upstream",
    "bound",
    "build_plan",
    "explore_schedule",
    "explore_store",
    "http_builder",
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
