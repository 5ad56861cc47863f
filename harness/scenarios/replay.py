"""Replay: run a recorded run folder (or a scenario file) again, following its schedule, and
say whether the history is the same, byte for byte, or where it diverged.

A replay repeats the recorded *schedule* — the same seed, so the same arrivals — not the verdict:
a race inside a concurrent group, or against a live service, is decided again by the operating
system and the network. So a recorded failure that passes on replay is "not reproduced this time"
(unknown), never evidence of a fix; a trial of a series says how often its race showed
(:func:`reproduction`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.domain.verdicts import FROM_STATUS_WORD, STATUS_WORD, Promise
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
    #: the replay decides nothing anew: an in-process target on the virtual clock, no concurrent
    #: group (threads racing) — then a pass where the recorded run failed is evidence
    deterministic: bool = True

    @property
    def recorded_status(self) -> Promise | None:
        """The recorded run's promise (a run folder keeps passed / violated: the domain's held /
        broken)."""
        if self.recorded is None:
            return None
        return FROM_STATUS_WORD.get(str(self.recorded.results.get("status")))

    @property
    def trial(self) -> dict[str, Any] | None:
        """The recorded run's place in its trial series (trial k of n, m of them broke)."""
        trial = self.recorded.results.get("trial") if self.recorded is not None else None
        return trial if isinstance(trial, dict) else None

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
    deterministic = target.virtual_clock and not scenario.has_groups
    try:
        result = run_scenario(scenario, target, seed=seed, choices=choices, arrival=arrival)
    except Divergence as exc:
        return ReplayOutcome(None, recorded, f"the schedule diverged: {exc.message}",
                             deterministic)
    if recorded is None:
        return ReplayOutcome(result, None, None, deterministic)
    now = [op.to_line() for op in result.history]
    difference = first_difference(recorded.history_lines, now)
    if difference is None and STATUS_WORD[result.status] != recorded.results.get("status"):
        difference = (f"the verdict changed: recorded {recorded.results.get('status')}, "
                      f"now {STATUS_WORD[result.status]}")
    return ReplayOutcome(result, recorded, difference, deterministic)


@dataclass(frozen=True, slots=True)
class Reproduction:
    """What a replay of a failing run shows about the failure: ``outcome`` is ``pass`` (it
    reproduced, or there was nothing to reproduce), ``unknown`` (not reproduced this time: no
    evidence either way) — and the note that says so."""

    outcome: str
    note: str


def rate_text(trial: dict[str, Any] | None) -> str:
    """``the race showed in 13 of 20 trials`` for a trial of a series, else ''."""
    if not trial or "broke" not in trial or "of" not in trial:
        return ""
    pattern = trial.get("pattern")
    where = f" {pattern}" if pattern and pattern != "sequential" else ""
    trials = "trial" if trial["of"] == 1 else "trials"
    return f"the race showed in {trial['broke']} of {trial['of']}{where} {trials}"


def reproduction(outcome: ReplayOutcome, *, tries: int = 1) -> Reproduction | None:
    """How a replay's verdict relates to the recorded one (after ``tries`` replays, the last
    being ``outcome``); None when there is nothing to say (a scenario file, or a recorded run
    that held)."""
    was, result = outcome.recorded_status, outcome.result
    if result is None or was not in ("broken", "unknown"):
        return None
    rate = rate_text(outcome.trial)
    if result.status == "held" and outcome.identical is False and not outcome.deterministic:
        shown = f" — {rate} —" if rate else f" (the recorded run was {STATUS_WORD[was]})"
        if tries == 1:
            return Reproduction("unknown", f"not reproduced this time{shown} so this pass is not "
                                "evidence of a fix: a replay repeats the arrival schedule, not "
                                "the race's outcome; replay with --until-violated N, or measure "
                                "the rate again (scenarios run --trials N)")
        chance = chance_of_passes(outcome.trial, tries)
        odds = "" if chance is None else (f"; had it still happened at that rate, {tries} passes "
                                          f"in a row had {_chance(chance)}")
        return Reproduction("unknown", f"not reproduced in {tries} replays{shown.rstrip(' —')}"
                            f"{odds}: measure the rate again before calling it fixed (scenarios "
                            "run --trials N: 0 of N trials is the evidence)")
    if result.status == was == "broken":
        again = "violated again" + (f" on replay {tries}" if tries > 1 else "")
        return Reproduction("pass", f"reproduced: {again}" + (f" ({rate})" if rate else ""))
    return None


def _chance(chance: float) -> str:
    return "a chance under 0.01%" if chance < 0.0001 else f"a {chance:.2%} chance"


def replay_until(path: Path, target: Target, tries: int, *, seed: int | None = None,
                 say: Callable[[str], None] | None = None) -> tuple[ReplayOutcome, int]:
    """Replay ``path`` up to ``tries`` times, stopping at the first run that is not a pass
    (violated, unknown, or a schedule that diverged); the last outcome and how many ran."""
    outcome = replay(path, target, seed=seed)
    n = 1
    while n < tries and outcome.result is not None and outcome.result.status == "held":
        if say is not None:
            say(f"replay {n} of {tries}: passed")
        outcome = replay(path, target, seed=seed)
        n += 1
    return outcome, n


def chance_of_passes(trial: dict[str, Any] | None, passes: int) -> float | None:
    """If the race still happened at the recorded rate, the chance of ``passes`` passing
    replays in a row (None without a rate)."""
    if not trial or not trial.get("of"):
        return None
    rate = float(trial.get("broke", 0)) / float(trial["of"])
    return float((1.0 - rate) ** passes)
