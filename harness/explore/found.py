"""What ``explore`` reports once a search ends, on a store or through a service's storage: the
progress ticker, a clean search, and a violation (shrunk, written as a repro folder, replayed
once and emitted with the command that replays it)."""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar

from harness.domain.words import counted
from harness.explore.emit import explore_result
from harness.explore.replay import replay_repro
from harness.explore.repro import read_repro, write_repro
from harness.explore.shrink import shrink
from harness.scenarios.runfolder import replay_command

if TYPE_CHECKING:
    from harness.domain.stream import Folder
    from harness.explore.events import ExploreResult
    from harness.explore.search import Found, Progress, SearchSettings

PROGRESS_EVERY_S = 2.0


class Ticker:
    """Progress: a rich bar on a terminal (stderr), else a plain line every couple of seconds;
    the final counters are always printed."""

    def __init__(self, say: Any, total: int | None = None) -> None:
        self.say = say
        self.last = time.perf_counter()
        self.progress: Progress | None = None
        console = Console(stderr=True)
        self.bar = Bar(TextColumn("exploring"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("{task.description}"),
                       console=console, transient=True, disable=not console.is_terminal)
        self.task = self.bar.add_task("", total=total)
        self.bar.start()

    def __call__(self, progress: Progress) -> None:
        self.progress = progress
        if not self.bar.disable:
            self.bar.update(self.task, completed=progress.schedules,
                            description=counted(progress.violations, "violation"))
            return
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.say(f"  {progress.line()}")

    def final(self) -> None:
        self.bar.stop()
        if self.progress is not None:
            self.say(f"  {self.progress.line()}")



def clean_event(found: Found, settings: SearchSettings, target: str) -> ExploreResult:
    """A search that found no violation: what it covered."""
    progress = found.progress
    if found.exhausted:
        note = (f"no violation: every interleaving of the smallest plan was explored "
                f"({progress.schedules} schedules, {progress.steps} steps)")
    else:
        spent = "time limit reached" if settings.time_limit is not None else "budget spent"
        note = f"no violation in {progress.schedules} schedules ({progress.steps} steps); {spent}"
    return explore_result(None, target=target, settings=settings, found=found,
                          note="\n".join([note, *progress.tally.lines()]))


def violation_event(controller: Any, found: Found, settings: SearchSettings, target: str, *,
                    folder: Folder, say: Any, shrinking: bool = True,
                    commit_steps: bool = False,
                    through: dict[str, Any] | None = None) -> ExploreResult:
    """A violation found: shrunk (unless ``shrinking`` is off), written as a repro folder,
    replayed once, with the command that replays it."""
    outcome = found.outcome
    assert outcome is not None
    original = outcome.steps
    shrink_figures = None
    if shrinking and not found.shrunk_by_hypothesis:
        say(f"found: {', '.join(outcome.broken)} after {found.progress.schedules} "
            f"schedules ({outcome.steps} steps); shrinking:")
        shrunk = shrink(controller, outcome, progress=lambda text: say(f"  {text}"))
        outcome = shrunk.outcome
        shrink_figures = {"original_steps": shrunk.original_steps,
                          "original_ops": shrunk.original_ops, "plan_runs": shrunk.plan_runs,
                          "hypothesis_runs": shrunk.hypothesis_runs,
                          "original_preemptions": shrunk.original_preemptions,
                          "preemption_runs": shrunk.preemption_runs,
                          "elapsed_s": round(shrunk.elapsed_s, 3), "note": shrunk.note}
    found_info = {"workload": settings.workload, "seed": settings.seed,
                  "schedule": found.schedule, "choices": settings.choices,
                  "schedules": found.progress.schedules, "clients": settings.clients,
                  "commit_steps": commit_steps}
    if settings.choices == "pct":
        found_info["depth"] = settings.depth
    repro = write_repro(outcome, folder(), target=target, found=found_info,
                        shrink=shrink_figures, through=through)
    again = replay_repro(controller, read_repro(repro))
    note = ""
    if through is None:
        command = replay_command(repro, target.replace(":***@", "@"))
        if "***" in target:
            note = "put the real URL in --target (or set PGPASSWORD): the password is not stored"
    else:
        command = shlex.join(["failover-harness", "replay", str(repro)])
        if "***" in str(through.get("storage")):
            note = "add --through with the full URL: the password is not stored"
    return explore_result(
        outcome, target=target, settings=settings, found=found, original_steps=original,
        repro=repro, replay=command, replayed_identical=again.identical,
        replay_divergence=again.divergence, note=note)
