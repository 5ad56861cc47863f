"""What a search without a violation is evidence of, promise by promise.

A schedule with no violation says only as much as it exercised. Each checker declares the
evidence it needs (``CheckResult.evidence``: "a duplicate create answered", "a claim answered won
or lost"…) and counts it in the history (``seen``); a schedule whose history holds none of it
judged nothing about that promise, however "held" the checker's verdict reads. So explore tallies,
per promise, the schedules that *exercised* it (seen > 0, or a checker that judges whatever the
history shows) against the schedules whose plan checked it.

A clean search means: no schedule violated a promise, no schedule was unknown (an answer that
never came can hide a violation), and every promise the plans checked was exercised by at least
one schedule. Otherwise the search is **unknown** (exit 3), naming each promise no schedule
exercised (with what it needed) and why schedules were unknown — never "no race found" about a
promise nothing tested.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.domain.words import counted

if TYPE_CHECKING:
    from harness.explore.controller import ScheduleRun

MORE_FIX = ("explore longer (--budget / --time-limit), or choose a workload that exercises it "
            "(--workload)")
SMALLEST_FIX = ("the smallest plans do not exercise it: explore it with --choices seeded or pct "
                "(they draw larger plans)")
MAX_REASONS = 3


@dataclass
class Tally:
    """Per promise: the schedules whose plan checked it, and those that exercised it."""

    schedules: int = 0
    unknown: int = 0  # schedules whose verdict was unknown
    idle: int = 0  # schedules that exercised none of the promises they checked
    checked: Counter[str] = field(default_factory=Counter)
    exercised: Counter[str] = field(default_factory=Counter)
    needs: dict[str, str] = field(default_factory=dict)  # checker → the evidence it needs
    promises: dict[str, str] = field(default_factory=dict)  # checker → its promise text
    unknown_in: Counter[str] = field(default_factory=Counter)  # checker → unknown schedules
    reasons: dict[str, Counter[str]] = field(default_factory=dict)  # checker → why unknown
    fixes: dict[str, list[str]] = field(default_factory=dict)  # checker → what to do about it

    def add(self, outcome: ScheduleRun) -> None:
        """Count one schedule that broke no promise."""
        self.schedules += 1
        if outcome.status == "unknown":
            self.unknown += 1
        bearing = exercised = 0  # checkers that declare their evidence; those that saw it
        for check in outcome.checks:
            name = check.checker
            self.checked[name] += 1
            self.promises.setdefault(name, check.promise)
            if check.evidence is not None:
                self.needs.setdefault(name, check.evidence)
                bearing += 1
            if check.verdict == "unknown":
                self.unknown_in[name] += 1
                self.reasons.setdefault(name, Counter()).update(set(check.unknowns))
                fixes = self.fixes.setdefault(name, [])
                fixes.extend(f for f in check.fixes if f not in fixes)
            elif check.verdict == "held" and (check.seen is None or check.seen > 0):
                self.exercised[name] += 1
                exercised += check.seen is not None
        if outcome.status != "unknown" and bearing and not exercised:
            self.idle += 1

    def unexercised(self) -> list[str]:
        """The promises some plan checked and no schedule exercised."""
        return [name for name in self.checked if not self.exercised[name]]

    @property
    def clean(self) -> bool:
        """At least one schedule, none unknown, and every promise exercised at least once."""
        return bool(self.schedules) and not self.unknown and not self.unexercised()

    def why_unexercised(self, name: str) -> str:
        needs = self.needs.get(name)
        return (f"not exercised: none of the {self.checked[name]} schedules that checked it "
                + (f"saw a {needs}" if needs else "judged anything"))

    def lines(self, unit: str = "schedules") -> list[str]:
        """The evidence, for people: one line per promise, then the unknown schedules (``unit``:
        what one run is called, ``rounds`` for --stress)."""
        width = max((len(name) for name in self.checked), default=0)
        out = [f"evidence: {self.schedules - self.idle - self.unknown} of {self.schedules} "
               f"{unit} exercised at least one promise"
               + (f"; {self.idle} exercised none (no evidence of anything)" if self.idle
                  else "")]
        for name, checked in self.checked.items():
            done = self.exercised[name]
            text = f"  {name:<{width}}  exercised in {done} of {checked} {unit}"
            if not done:
                needs = self.needs.get(name)
                text += " — NOT EXERCISED" + (f" (needs a {needs})" if needs else "")
            out.append(text)
            if self.unknown_in[name]:
                out.append(f"  {'':<{width}}  unknown in {self.unknown_in[name]}: "
                           + "; ".join(self.top_reasons(name)))
        if self.unknown:
            out.append(f"{self.unknown} of {self.schedules} {unit} were unknown (why: "
                       "above): not evidence either way")
        missing = self.unexercised()
        if missing:
            out.append(f"not evidence about {', '.join(missing)}: no {unit[:-1]} exercised "
                       + ("it" if len(missing) == 1 else "them"))
        return out

    def top_reasons(self, name: str) -> list[str]:
        """Why ``name`` was unknown, most frequent first (with how many schedules said so)."""
        found = self.reasons.get(name, Counter())
        shown = [reason + (f" (×{count})" if count > 1 else "")
                 for reason, count in found.most_common(MAX_REASONS)]
        if len(found) > MAX_REASONS:
            shown.append(f"… and {counted(len(found) - MAX_REASONS, 'other reason')}")
        return shown


__all__ = ["MORE_FIX", "SMALLEST_FIX", "Tally"]
