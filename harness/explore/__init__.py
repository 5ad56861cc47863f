"""Explore: find, shrink and replay real database races, one SQL statement at a time.

::

    workload ──draw──▶ Plan ──Controller──▶ ScheduleRun (history, schedule) ──checkers──▶ verdict
                           │     ▲   one Worker (thread + session) per client; every
                           │     │   statement is held for the controller's grant
                           │   choice source: SwarmChoices (seeded) | PrefixChoices (exhaustive)
                           │                | HypothesisChoices | RecordedChoices (replay)
                           ▼
          violation ──shrink──▶ smallest ScheduleRun ──write_repro──▶ reports/repro/<id>/
                                                                 └─ failover-harness replay

Modules: ``plan`` (the data a schedule runs), ``workloads`` (double-click, mismatch, claims,
timeouts), ``hold`` (workers and held connections), ``sessions`` (attaching to a store,
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

from typing import Any as _Any

from harness.domain import lazy as _lazy

# imported lazily, so that importing one module of the room (its events, for the reports)
# does not run the whole engine
_EXPORTS = {
    "Controller": "controller",
    "ExploreStuck": "controller",
    "Found": "search",
    "GuidedChoices": "choices",
    "HTTP_WORKLOADS": "http_workloads",
    "HypothesisChoices": "choices",
    "HypothesisDraw": "choices",
    "OpSpec": "plan",
    "OpenHold": "proxy",
    "ScheduleRun": "controller",
    "PctChoices": "pct",
    "Plan": "plan",
    "PrefixChoices": "choices",
    "Problem": "proxy",
    "Proxy": "proxy",
    "RaceFound": "property",
    "RandomDraw": "plan",
    "RecordedChoices": "choices",
    "Replayed": "replay",
    "Repro": "repro",
    "Runner": "controller",
    "SearchSettings": "search",
    "Shrunk": "shrink",
    "SmallestDraw": "plan",
    "HeldStep": "proxy",
    "SwarmChoices": "choices",
    "ThroughController": "through",
    "TimerSpec": "plan",
    "Upstream": "proxy",
    "WORKLOADS": "workloads",
    "bound": "pct",
    "build_plan": "workloads",
    "explore_schedule": "property",
    "explore_store": "target",
    "http_builder": "http_workloads",
    "is_explore_repro": "repro",
    "next_prefix": "choices",
    "read_repro": "repro",
    "replay_repro": "replay",
    "run_free": "stress",
    "search": "search",
    "shrink": "shrink",
    "stress": "stress",
    "write_repro": "repro",
}

__all__ = [
    "HTTP_WORKLOADS",
    "WORKLOADS",
    "Controller",
    "ExploreStuck",
    "Found",
    "GuidedChoices",
    "HeldStep",
    "HypothesisChoices",
    "HypothesisDraw",
    "OpSpec",
    "OpenHold",
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
    "ScheduleRun",
    "SearchSettings",
    "Shrunk",
    "SmallestDraw",
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


def __getattr__(name: str) -> _Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
