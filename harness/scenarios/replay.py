"""Replay: run a recorded run folder (or a scenario file) again, following its schedule, and
say whether the history is the same, byte for byte, or where it diverged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.scenarios.loader import load_scenario
from harness.scenarios.runfolder import RecordedRun, read_run
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.scheduler import Divergence, RecordedChoices, decisions_of
from harness.scenarios.targets.base import Target


@dataclass
class ReplayOutcome:
    """The new run, the recorded one (for a run folder), and the first difference if any."""

    result: RunResult | None
    recorded: RecordedRun | None
    divergence: str | None

    @property
    def identical(self) -> bool | None:
        """True/False for a run folder; None for a scenario file (nothing to compare)."""
        if self.recorded is None:
            return None
        return self.divergence is None


def recorded_target(path: Path) -> str | None:
    """The target a run folder ran on, if it can run again in-process (not HTTP)."""
    if not path.is_dir():
        return None
    target = str(read_run(path).results.get("target", ""))
    return None if target.startswith(("http://", "https://")) or "***" in target else target


def first_difference(recorded: list[str], now: list[str]) -> str | None:
    """Where two histories part, as text; None when they are identical."""
    for n, (old, new) in enumerate(zip(recorded, now, strict=False)):
        if old != new:
            return f"op #{n} differs:\n  recorded: {old}\n  now:      {new}"
    if len(recorded) != len(now):
        shorter = "the new run" if len(now) < len(recorded) else "the recorded run"
        return (f"{shorter} stops after {min(len(now), len(recorded))} ops "
                f"(recorded {len(recorded)}, now {len(now)})")
    return None


def replay(path: Path, target: Target, *, seed: int | None = None) -> ReplayOutcome:
    """Replay ``path`` (a run folder or a scenario file) on ``target``."""
    recorded: RecordedRun | None = None
    arrival: str | None = None
    if path.is_dir():
        recorded = read_run(path)
        scenario = load_scenario(recorded.scenario_file)
        seed = int(recorded.results.get("seed", 0)) if seed is None else seed
        choices: RecordedChoices | None = RecordedChoices(decisions_of(recorded.schedule))
        arrival = recorded.results.get("arrival")  # the same seed: the same arrival plan
    else:
        scenario = load_scenario(path)
        choices = None
    try:
        result = run_scenario(scenario, target, seed=seed, choices=choices, arrival=arrival)
    except Divergence as exc:
        return ReplayOutcome(None, recorded, f"the schedule diverged: {exc.message}")
    if recorded is None:
        return ReplayOutcome(result, None, None)
    now = [op.to_line() for op in result.history]
    difference = first_difference(recorded.history_lines, now)
    if difference is None and result.status != recorded.results.get("status"):
        difference = (f"the verdict changed: recorded {recorded.results.get('status')}, "
                      f"now {result.status}")
    return ReplayOutcome(result, recorded, difference)
