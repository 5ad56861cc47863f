"""Scenario-engine fixtures: the shipped scenarios, a history builder, scenario files in tmp."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.scenarios.history import Op
from harness.scenarios.loader import load_scenario, scenario_files
from harness.scenarios.model import Scenario
from harness.scenarios.targets import Target, open_target

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = ROOT / "scenarios"
Opener = Callable[..., "Target"]
SEED_FOUR = ("double_click", "mismatched_key", "timeout_unknown", "out_of_order_completion")


@pytest.fixture(scope="session")
def shipped() -> dict[str, Scenario]:
    """Every scenario in scenarios/, by name."""
    return {s.name: s for s in (load_scenario(p) for p in scenario_files([SCENARIOS_DIR]))}


class HistoryBuilder:
    """Hand-written histories for checker tests: ``op(process, f, invoke, type, value)``."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, process: str, f: str, invoke: dict[str, Any], type_: str = "ok",
           value: dict[str, Any] | None = None) -> HistoryBuilder:
        i = len(self.ops)
        self.ops.append(Op(i, 0.0, "w", process, "invoke", f, invoke))
        self.ops.append(Op(i + 1, 0.0, "w", process, type_, f, value or {}))  # type: ignore[arg-type]
        return self

    # shorthands -----------------------------------------------------------------------------
    def create(self, job: str | None, *, owner: str = "alice", key: str = "k", fp: str = "F1",
               created: bool = False, type_: str = "ok", error: str | None = None,
               max_open: int = 1, process: str | None = None,
               reported_fp: str | None = None) -> HistoryBuilder:
        inv = {"owner": owner, "key": key, "fingerprint": fp, "max_open_attempts": max_open}
        value = ({"job": job, "created": created, "fingerprint": reported_fp or fp,
                  "version": 1, "status": "pending"}
                 if type_ == "ok" else {"status": 409, "error": error})
        return self.op(process or owner, "create", inv, type_, value)

    def start(self, attempt: str, job: str = "job", *, owner: str = "alice",
              type_: str = "ok", error: str | None = None) -> HistoryBuilder:
        inv = {"owner": owner, "job": job, "provider": "p", "attempt": attempt}
        value = ({"attempt": attempt, "job": job, "state": "starting", "read_version": 1}
                 if type_ == "ok" else {"status": 409 if error != "not_found" else 404,
                                        "error": error})
        return self.op(f"worker:{attempt}", "start", inv, type_, value)

    def event(self, attempt: str, f: str, *, state: str, outcome: str | None = None,
              payload: str | None = None, type_: str = "ok",
              error: str | None = None) -> HistoryBuilder:
        inv: dict[str, Any] = {"owner": "alice", "attempt": attempt}
        if payload:
            inv["result_sha256"] = payload
        value = ({"attempt": attempt, "state": state, "outcome": outcome}
                 if type_ == "ok" else {"status": 409, "error": error})
        return self.op(f"worker:{attempt}", f, inv, type_, value)

    def read(self, job: str = "job", *, owner: str = "alice", type_: str = "ok",
             **value: Any) -> HistoryBuilder:
        if type_ != "ok":
            return self.op(owner, "read", {"owner": owner, "job": job}, type_, value)
        return self.op(owner, "read", {"owner": owner, "job": job}, "ok",
                       {"job": job, **value})

    def races(self, job: str = "job", races: list[dict[str, Any]] | None = None) -> HistoryBuilder:
        return self.op("alice", "races", {"owner": "alice", "job": job}, "ok",
                       {"races": races or []})


@pytest.fixture
def history() -> HistoryBuilder:
    return HistoryBuilder()


@pytest.fixture
def sqlite_target() -> Iterator[Target]:
    """The reference store on a temporary SQLite file, closed after the test."""
    with open_target("sqlite") as target:
        yield target


@pytest.fixture
def open_targets() -> Iterator[Opener]:
    """``open_target`` whose targets are all closed after the test."""
    opened: list[Target] = []

    def opener(*args: Any, **kwargs: Any) -> Target:
        target = open_target(*args, **kwargs)
        opened.append(target)
        return target

    yield opener
    for target in opened:
        target.close()
