"""A trial series judged from per-trial records: one judgement for a whole run and for shards.

A trial set (:class:`~harness.scenarios.trials.TrialSet`) becomes :class:`TrialRecord`\\ s, one
per trial: its verdict, the failures it showed, its losers' answers, its unknowns, and — for a
trial that may be the one a report shows (the first failing trial of a failure in its pattern,
the first trial of an unknown) — that evidence, ready. :func:`series_of` judges the records:
rates, histograms, the first failing trial of each failure, the unknowns and their counts.

A whole run judges its own records; a shard (``--shard K/N``) runs some trials of a series and
records them beside its event (:func:`series_evidence`), and ``merge`` judges every shard's
records together (:func:`merge_series`): the same function over the same trials, so the merged
series is the series one run would give — rates summed over trials, never the worst of shards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from harness.domain.verdicts import OUTCOME, Promise
from harness.domain.words import counted, of
from harness.scenarios.checkers.base import PROMISES
from harness.scenarios.checkers.losers import ALLOWED, busy_answers, loser_classes, ordered
from harness.scenarios.emit import timeline_of, unknown_of, unrun_of, violations_of
from harness.scenarios.events import (
    FirstFailure,
    LoserCount,
    PatternSummary,
    Rate,
    TrialFailure,
    TrialSeries,
    UnknownCount,
    Violation,
)
from harness.scenarios.history import pairs
from harness.scenarios.render import format_pair
from harness.scenarios.trials import failure_id, failure_title, rate_phrase

if TYPE_CHECKING:
    from harness.scenarios.trials import TrialSet

UnknownKey = tuple[str, str, str]  # (checker, reason, fix)


@dataclass(slots=True)  # not frozen: a merge builds 100,000 of them, and none is changed
class TrialRecord:
    """One trial of a series, as its judgement needs it."""

    pattern: str  # the trial set's pattern (``sequential`` without concurrent groups)
    trial: int  # 0-based, within the pattern (its seed is the series' seed + trial)
    status: Promise
    broken: tuple[str, ...] = ()  # checkers it broke
    failures: tuple[str, ...] = ()  # ``checker`` / ``checker:kind``, in the order it showed them
    losers: dict[str, int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)
    unknowns: tuple[UnknownKey, ...] = ()
    fixes: tuple[str, ...] = ()
    reason: str = ""  # not applicable: why
    firsts: dict[str, FirstFailure] = field(default_factory=dict)  # failure → its evidence
    unknown_first: FirstFailure | None = None  # the evidence of its unknowns


@dataclass(frozen=True)
class SeriesHead:
    """What a series is, before any trial: names, promises in the target's terms."""

    scenario: str
    target: str
    seed: int
    trials: int
    source: str
    description: str
    checkers: tuple[str, ...]
    promises: tuple[str, ...]
    patterns: tuple[str, ...]
    warnings: tuple[str, ...] = ()


# -- a trial set as records ---------------------------------------------------------------------
def unknown_keys(run: Any) -> set[UnknownKey]:
    """(checker, reason, fix) of each unknown one run showed (a step that did not happen too)."""
    seen = set()
    for check in run.checks:
        if check.verdict == "unknown":
            fixes = tuple(getattr(check, "fixes", ()) or ())
            for n, item in enumerate(check.unknowns):
                u = unknown_of(item)
                fix = u.fix or (fixes[n] if len(fixes) == len(check.unknowns)
                                else fixes[0] if len(fixes) == 1 else "")
                seen.add((check.checker, u.reason, fix))
    for step in unrun_of(run):
        seen.add(("", f"did not happen: {step.why}", step.fix))
    return seen


def first_unknown_runs(ts: TrialSet) -> list[Any]:
    """The first unknown run of each kind of unknown (their run folders are kept as evidence)."""
    firsts: dict[UnknownKey, Any] = {}
    for run in ts.all_runs:
        if run.status == "unknown":
            for key in unknown_keys(run):
                firsts.setdefault(key, run)
    return list({id(run): run for run in firsts.values()}.values())


def first_failing_runs(ts: TrialSet) -> list[Any]:
    """The first run of each pattern that showed each failure: the trials a report may show."""
    chosen: dict[int, Any] = {}
    for rates in ts.failures().values():
        for rate in rates.values():
            if rate.first is not None:
                chosen.setdefault(id(rate.first), rate.first)
    return list(chosen.values())


def _unanswered(run: Any) -> tuple[Violation, ...]:
    """The requests of a run that got no answer, with what the client saw (the op's detail)."""
    lines = tuple(format_pair(p) for p in pairs(run.history) if p.type == "info")
    if not lines:
        return ()
    return (Violation(f"{counted(len(lines), 'request')} got no answer", "", (), lines),)


def _fixes(run: Any) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for check in run.checks:
        if check.verdict == "unknown":
            found.update(dict.fromkeys(check.fixes))
    found.update(dict.fromkeys(u["fix"] for u in run.unrun))
    return tuple(found)


def _failures(run: Any) -> tuple[str, ...]:
    return tuple(failure_id(c.checker, v.kind) for c in run.checks if c.verdict == "broken"
                 for v in c.violations)


def _evidence(run: Any, ts: TrialSet, *, failure: str | None, replay: str | None,
              measure: str | None) -> FirstFailure:
    """A trial as a report shows it: its violations (of ``failure``, else its unanswered
    requests), timeline and commands."""
    if failure is None:
        violations = _unanswered(run)
    else:
        checker, _, kind = failure.partition(":")
        violations = tuple(v for c in run.checks if c.checker == checker
                           for v in violations_of(c, run.history, kind or None))
    return FirstFailure(
        trial=run.seed - ts.seed + 1, seed=run.seed, pattern=run.arrival,
        violations=violations,
        timeline=timeline_of(run.history, run.virtual_seconds, run.arrivals),
        run_dir=str(run.folder) if run.folder else None, replay_command=replay,
        measure_command=measure)


def trial_records(ts: TrialSet, *, replays: Mapping[int, str] | None = None,
                  measure: Callable[[str | None], str] | None = None) -> list[TrialRecord]:
    """Every trial of ``ts`` as a record, the first failing trial of each failure and pattern
    and the first trial of each unknown with their evidence (``replays``: by ``id(run)``, the
    command that replays a run whose folder was written)."""
    replays = replays or {}
    failing: dict[int, dict[str, Any]] = {}
    for failure, rates in ts.failures().items():
        for rate in rates.values():
            if rate.first is not None:
                failing.setdefault(id(rate.first), {})[failure] = rate.first
    unknown_firsts = {id(run) for run in first_unknown_runs(ts)}
    records = []
    for pattern in ts.patterns:
        for run in ts.runs.get(pattern, []):
            firsts = {failure: _evidence(run, ts, failure=failure, replay=replays.get(id(run)),
                                         measure=measure(run.arrival) if measure else None)
                      for failure in failing.get(id(run), {})}
            records.append(TrialRecord(
                pattern=pattern, trial=run.seed - ts.seed, status=run.status,
                broken=tuple(c.checker for c in run.checks if c.verdict == "broken"),
                failures=_failures(run), losers=dict(loser_classes(run.history)),
                busy=dict(busy_answers(run.history)), unknowns=tuple(sorted(unknown_keys(run))),
                fixes=_fixes(run), reason=run.reason or "" if run.status == "not_applicable"
                else "", firsts=firsts,
                unknown_first=_evidence(run, ts, failure=None, replay=replays.get(id(run)),
                                        measure=None) if id(run) in unknown_firsts else None))
    return records


def series_head(ts: TrialSet) -> SeriesHead:
    def promise(checker: str) -> str:  # in the target's terms when the engine says them
        said = getattr(ts, "promise", None)
        return str(said(checker)) if callable(said) else PROMISES.get(checker, checker)

    runs = ts.all_runs
    return SeriesHead(
        scenario=ts.scenario.name, target=ts.target, seed=ts.seed, trials=ts.trials,
        source=ts.scenario.source, description=ts.scenario.description or "",
        checkers=tuple(ts.scenario.checkers),
        promises=tuple(promise(c) for c in ts.scenario.checkers), patterns=ts.patterns,
        warnings=tuple(str(w) for w in getattr(runs[0], "warnings", ())) if runs else ())


# -- records as a series ------------------------------------------------------------------------
def _status(records: Sequence[TrialRecord]) -> Promise:
    statuses = {r.status for r in records}
    if not statuses or statuses == {"not_applicable"}:
        return "not_applicable"
    return "broken" if "broken" in statuses else "unknown" if "unknown" in statuses else "held"


def _broke(record: TrialRecord, failure: str) -> bool:
    checker, colon, _ = failure.partition(":")
    return failure in record.failures if colon else checker in record.broken


def _counts(items: Iterable[Mapping[str, int]]) -> Counter[str]:
    total: dict[str, int] = {}
    for item in items:
        for key, n in item.items():
            total[key] = total.get(key, 0) + n
    return Counter(total)


def _failure(failure: str, head: SeriesHead, by_pattern: dict[str, list[TrialRecord]]
             ) -> TrialFailure:
    checker, _, kind = failure.partition(":")
    rates, firsts = [], []
    for pattern, records in by_pattern.items():
        failing = [r for r in records if _broke(r, failure)]
        rates.append(Rate(pattern, len(failing), len(records),
                          f"{of(len(failing), len(records), 'trial')} {rate_phrase(failure)}"))
        firsts.append(failing[0] if failing else None)
    most = max(range(len(rates)), key=lambda n: rates[n].failed)  # the first of the most
    first_record = firsts[most]
    promise = dict(zip(head.checkers, head.promises, strict=True))
    return TrialFailure(
        id=failure, checker=checker, title=failure_title(failure),
        promise=promise.get(checker, PROMISES.get(checker, checker)), kind=kind,
        rates=tuple(rates),
        first=first_record.firsts.get(failure) if first_record is not None else None)


def _unknowns(records: Sequence[TrialRecord]) -> tuple[UnknownCount, ...]:
    counts: Counter[UnknownKey] = Counter()
    firsts: dict[UnknownKey, TrialRecord] = {}
    for record in records:
        if not record.unknowns:
            continue
        counts.update(record.unknowns)
        for key in record.unknowns:
            firsts.setdefault(tuple(key), record)  # type: ignore[arg-type]
    return tuple(UnknownCount(reason, n, checker, fix, firsts[(checker, reason, fix)]
                              .unknown_first)
                 for (checker, reason, fix), n in sorted(counts.items()))


def series_of(head: SeriesHead, records: Iterable[TrialRecord], *,
              wall_s: float = 0.0) -> TrialSeries:
    """The series of ``head`` judged from ``records`` (in any order: they are put in pattern
    and trial order here)."""
    rank = {p: n for n, p in enumerate(head.patterns)}
    ordered_records = sorted(records, key=lambda r: (rank.get(r.pattern, len(rank)), r.trial))
    by_pattern: dict[str, list[TrialRecord]] = {}
    for record in ordered_records:
        by_pattern.setdefault(record.pattern, []).append(record)
    status = _status(ordered_records)
    shown: dict[str, dict[str, None]] = {c: {} for c in head.checkers}  # in first-seen order
    for record in ordered_records:
        for failure in record.failures:
            shown.get(failure.partition(":")[0], {}).setdefault(failure)
    found = [f for checker in head.checkers for f in shown[checker]]
    patterns = tuple(
        PatternSummary(p, len(rs), sum(r.status == "broken" for r in rs),
                       _losers(_counts(r.losers for r in rs)),
                       tuple(LoserCount(k, n) for k, n in
                             sorted(_counts(r.busy for r in rs).items()) if n))
        for p, rs in by_pattern.items()
    ) if status != "not_applicable" else ()
    fixes: dict[str, None] = {}
    for record in ordered_records:
        fixes.update(dict.fromkeys(record.fixes))
    reason = next((r.reason for r in ordered_records if r.reason), "")
    return TrialSeries(
        scenario=head.scenario, target=head.target, verdict=status,
        outcome=OUTCOME[status], seed=head.seed, trials=head.trials, source=head.source,
        description=head.description, checkers=head.checkers, promises=head.promises,
        patterns=patterns, failures=tuple(_failure(f, head, by_pattern) for f in found),
        unknowns=_unknowns(ordered_records), fixes=tuple(fixes), warnings=head.warnings,
        reason=reason, wall_s=wall_s)


def _losers(histogram: Counter[str]) -> tuple[LoserCount, ...]:
    return tuple(LoserCount(label, n, None if label == "no answer" else label in ALLOWED)
                 for label, n in ordered(histogram))


def trial_series(ts: TrialSet, *, replays: Mapping[int, str] | None = None,
                 measure: Callable[[str | None], str] | None = None) -> TrialSeries:
    """A trial set as one event: rates per failure and pattern, the losers' histogram per
    pattern, and each failure's first failing trial (violations, timeline, commands)."""
    records = trial_records(ts, replays=replays, measure=measure)
    return series_of(series_head(ts), records, wall_s=ts.elapsed_s)


# -- shards -------------------------------------------------------------------------------------
@cache
def _first() -> TypeAdapter[FirstFailure]:
    return TypeAdapter(FirstFailure)


def record_of(data: Mapping[str, Any]) -> TrialRecord:
    """A record back from a shard's evidence (built directly: a long series has thousands;
    the evidence a trial shows is validated as its event's)."""
    firsts = data.get("firsts") or {}
    shown = data.get("unknown_first")
    return TrialRecord(
        pattern=str(data["pattern"]), trial=int(data["trial"]), status=data["status"],
        broken=tuple(data.get("broken", ())), failures=tuple(data.get("failures", ())),
        losers=dict(data.get("losers") or {}), busy=dict(data.get("busy") or {}),
        unknowns=tuple((str(c), str(r), str(f)) for c, r, f in data.get("unknowns", ())),
        fixes=tuple(data.get("fixes", ())), reason=str(data.get("reason", "")),
        firsts={k: _first().validate_python(v) for k, v in firsts.items()},
        unknown_first=_first().validate_python(shown) if shown else None)


@cache
def _head() -> TypeAdapter[SeriesHead]:
    return TypeAdapter(SeriesHead)


def series_evidence(ts: TrialSet, records: Sequence[TrialRecord]) -> dict[str, Any]:
    """What a shard records beside its part of a series, for :func:`merge_series` (each
    record without its empty fields: a shard of a long series keeps thousands)."""
    return {"kind": "trial_series", "head": asdict(series_head(ts)),
            "records": [{k: v for k, v in asdict(r).items() if v or k in _KEPT}
                        for r in records]}


_KEPT = ("pattern", "trial", "status")  # a record's fields without a default


def merge_series(parts: Sequence[tuple[TrialSeries, Mapping[str, Any]]]) -> TrialSeries:
    """One series from the shards' parts of it (each with its evidence): judged again from
    every trial's record, as one run judges its own."""
    head = _head().validate_python(parts[0][1]["head"])
    records = [record_of(r) for _, evidence in parts for r in evidence["records"]]
    head = replace(head, warnings=next(
        (_head().validate_python(e["head"]).warnings for _, e in parts if e["records"]), ()))
    return series_of(head, records, wall_s=sum(event.wall_s for event, _ in parts))
