"""Both halves at once (issue 30 item 5): the drill runs on its own thread while the scenarios
play, unless the drill's submit sends a fixed key; an exception of either reaches the caller."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.drill.beside import run_beside, separate_key_spaces
from harness.target.drill_profile import load_drill

DRILL = """\
name: p
drill:
  submit:
    path: /jobs
    headers: {{Idempotency-Key: "{key}"}}
    body: {{text: "Summarise {{tag}}"}}
  observe: {{path: "/jobs/{{job_id}}", statuses: {{succeeded: [done]}}}}
  providers: [{{name: gpt, wire: openai, role: primary, port: 1}}]
  timeouts: {{provider_s: 0.5}}
"""
WAIT_S = 10.0


def engine(tmp_path: Path, key: str, run: Any) -> Any:
    path = tmp_path / "d.yaml"
    path.write_text(DRILL.format(key=key), encoding="utf-8")
    return SimpleNamespace(profile=load_drill(path), run=run, stop=threading.Event())


def test_the_drill_runs_while_the_scenarios_play(tmp_path: Path) -> None:
    drilling, played = threading.Event(), threading.Event()

    def drill(names: list[str], trials: int) -> str:
        drilling.set()
        assert played.wait(WAIT_S), "the scenarios never ran beside the drill"
        return "results"

    def scenarios() -> None:
        assert drilling.wait(WAIT_S), "the drill never started beside the scenarios"
        played.set()

    e = engine(tmp_path, "{key}", drill)
    assert separate_key_spaces(e.profile)
    assert run_beside(e, scenarios, drills=["hang"], trials=1) == "results"


def test_a_fixed_drill_key_runs_the_halves_one_after_the_other(tmp_path: Path) -> None:
    order: list[str] = []
    e = engine(tmp_path, "same-key", lambda names, trials: order.append("drill"))
    assert not separate_key_spaces(e.profile)
    run_beside(e, lambda: order.append("scenarios"), drills=["hang"], trials=1)
    assert order == ["scenarios", "drill"]


def test_a_failing_drill_reaches_the_caller(tmp_path: Path) -> None:
    def drill(names: list[str], trials: int) -> None:
        raise RuntimeError("the fakes fell over")

    with pytest.raises(RuntimeError, match="fell over"):
        run_beside(engine(tmp_path, "{key}", drill), lambda: None, drills=["hang"], trials=1)
