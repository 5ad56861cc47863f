"""``merge``'s entry point: the report folders of a run's shards in, the run's report out.

A run split over a CI matrix (``--shard K/N``) leaves N report folders, each stamped with its
K/N, its job and the digests of its inputs (results.json's ``shard``). :func:`read_shards`
refuses, naming them, a folder that is no shard, shards of different totals, a shard missing or
given twice, and shards of another job, harness version, settings or input file.
:func:`run_merge` then gives the events of one run: a scenario run once (the shard that ran it),
a trial series judged again from every shard's trial records, the detection matrix from every
shard's cells, an explore search from every shard's schedules, a drill from every shard's
intents — in the run's canonical order, so the report folder, the exit code and every rendering
are those one unsharded run gives. Run and repro folders are copied into the merged folder.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from harness.campaign.merge_lock import merge_lock, shard_locks
from harness.domain.errors import ConfigError
from harness.domain.shard import Shard, ShardStamp, missing
from harness.domain.stream import QUIET, Begin, Folder, Live, Note, entry_point
from harness.drill.events import DrillRun
from harness.drill.merge import merge_drills
from harness.explore.events import ExploreResult
from harness.explore.merge import merge_searches
from harness.reports.model import Results, ShardInfo
from harness.scenarios.events import DetectionMatrix, ScenarioRun, TrialSeries
from harness.scenarios.matrix import merge_matrices
from harness.scenarios.series import merge_series
from harness.scenarios.sharding import unit

#: what a shard's folder may hold beside its renderings, copied into the merged folder
KEPT = ("runs", "repro")


@dataclass(frozen=True, kw_only=True)
class MergeSettings:
    """``failover-harness merge``: the shards' report folders."""

    folders: tuple[Path, ...]
    lock: Path | None = None  # certify's shards: the lock to merge into (default: theirs)


@dataclass(frozen=True)
class ShardReport:
    """One shard's report folder, read."""

    folder: Path
    results: Results
    info: ShardInfo

    @property
    def shard(self) -> Shard:
        return Shard(self.info.index, self.info.total)

    @property
    def stamp(self) -> ShardStamp:
        return ShardStamp(self.shard, self.info.job, tuple(sorted(self.info.inputs.items())))


@dataclass(frozen=True)
class Shards:
    """Every shard of one run, in K order."""

    command: str
    reports: tuple[ShardReport, ...]
    lock: Path | None = None  # certify's shards: the lock to merge into (default: theirs)


# -- reading and refusing -----------------------------------------------------------------------
def report_folder(given: Path) -> Path:
    """A report folder, or a report directory whose ``latest`` points at one."""
    if not (given / "results.json").is_file() and (given / "latest" / "results.json").is_file():
        return (given / "latest").resolve()
    return given


def read_report(given: Path) -> ShardReport:
    folder = report_folder(given)
    path = folder / "results.json"
    if not path.is_file():
        raise ConfigError("no results.json: not a report folder", file=str(given),
                          fix="give the report folders the shards wrote (--report-dir DIR: "
                          "DIR/latest, or DIR/<time>)")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        results = Results.from_json(document)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"not a results@2 document ({str(exc).splitlines()[0]})",
                          file=str(path), fix="give the report folders the shards wrote") from exc
    if results.shard is None:
        raise ConfigError("this report is not a shard's: it was run without --shard",
                          file=str(path), field="shard",
                          fix="run each job of the matrix with --shard K/N, then merge them")
    return ShardReport(folder, results, results.shard)


def read_shards(settings: MergeSettings) -> Shards:
    """The shards of one run, in K order, or ConfigError naming what does not belong."""
    if not settings.folders:
        raise ConfigError("no report folder given", field="DIR",
                          fix="failover-harness merge shard-1/ shard-2/ …")
    reports = [read_report(f) for f in settings.folders]
    first = reports[0]
    for other in reports[1:]:
        differs = first.stamp.differences(other.stamp)
        if differs:
            raise ConfigError(
                f"{_name(other)} is not a shard of the same run as {_name(first)}: "
                f"{', '.join(_said(d, first, other) for d in differs)} differ",
                field="shard",
                fix="merge the shards of one run: the same command, harness version, settings "
                    "and files, split K/N with the same N")
    by_index: dict[int, ShardReport] = {}
    for report in reports:
        seen = by_index.get(report.info.index)
        if seen is not None:
            raise ConfigError(f"shard {report.shard} is given twice: {seen.folder} and "
                              f"{report.folder}", field="shard",
                              fix="give each shard's report folder once")
        by_index[report.info.index] = report
    absent = missing((r.shard for r in reports), first.info.total)
    if absent:
        shown = ", ".join(f"{k}/{first.info.total}" for k in absent)
        raise ConfigError(f"shard {shown} missing: {len(reports)} of {first.info.total} given",
                          field="shard",
                          fix="give every shard's report folder (a failed or cancelled job's "
                              "too: its report says what it ran)")
    ordered = tuple(by_index[k] for k in sorted(by_index))
    return Shards(first.results.command, ordered, settings.lock)


def _name(report: ShardReport) -> str:
    return f"{report.folder} (shard {report.shard})"


def _said(what: str, one: ShardReport, other: ShardReport) -> str:
    if what == "shard total":
        return f"the totals ({one.info.total} and {other.info.total})"
    if what == "job":
        return f"the command ({one.info.job} and {other.info.job})"
    if what == "harness":
        return (f"the harness version ({one.results.harness_version} and "
                f"{other.results.harness_version})")
    return what


# -- merging ------------------------------------------------------------------------------------
Part = tuple[Any, Mapping[str, Any] | None]  # an event and the evidence its shard recorded


def _key(event: Any) -> str:
    if isinstance(event, ScenarioRun | TrialSeries):
        return unit("scenario", event.scenario)
    if isinstance(event, DrillRun):
        return unit("drill", event.drill)
    if isinstance(event, DetectionMatrix | ExploreResult):
        return event.TYPE
    if getattr(event, "TYPE", "") == "certification":
        return unit("certification", f"{event.provider}/{event.contract}")
    return f"{getattr(event, 'TYPE', 'event')}:{id(event)}"  # kept as it came


def _merged(key: str, parts: Sequence[Part]) -> Any:
    events = [event for event, _ in parts]
    first = events[0]
    if len(parts) == 1 and not isinstance(first, DetectionMatrix | TrialSeries
                                          | ExploreResult | DrillRun):
        return first
    needs = {TrialSeries: merge_series, ExploreResult: merge_searches, DrillRun: merge_drills}
    for kind, merge in needs.items():
        if isinstance(first, kind):
            if len(parts) == 1 and parts[0][1] is None:
                return first  # judged whole (a drill stopped by its probe)
            if any(evidence is None for _, evidence in parts):
                raise ConfigError(f"{key}: a shard recorded no evidence for it", field="shard",
                                  fix="merge reports written by this version's --shard")
            return merge([(e, ev) for e, ev in parts])  # type: ignore[operator]
    if isinstance(first, DetectionMatrix):
        return merge_matrices(events)
    return first  # the same event in several shards (one speaks for all)


def merged_events(shards: Shards) -> list[Any]:
    """The run's events: each unit merged from every shard's part of it, in the run's order."""
    order = {name: n for n, name in enumerate(shards.reports[0].info.order)}
    groups: dict[str, list[Part]] = {}
    for report in shards.reports:
        evidence = report.info.evidence
        for n, event in enumerate(report.results.events):
            groups.setdefault(_key(event), []).append(
                (event, evidence[n] if n < len(evidence) else None))
    seen = list(groups)
    keys = sorted(seen, key=lambda k: (0, order[k], 0) if k in order
                  else (1, 0, seen.index(k)))
    try:
        return [_merged(k, groups[k]) for k in keys]
    except (KeyError, TypeError, ValueError) as exc:  # ValidationError is a ValueError
        raise ConfigError(f"a shard's evidence is not what this version records ({exc!r:.200})",
                          field="shard", fix="merge reports written by this version's "
                          "--shard (the harness version is in each results.json)") from exc


def moved(value: Any, move: Callable[[str], str]) -> Any:
    """``value`` (an event) with ``move`` applied to every text in it."""
    if isinstance(value, str):
        return move(value)
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{f.name: moved(getattr(value, f.name), move)
                                 for f in fields(value)})
    if isinstance(value, tuple):
        return tuple(moved(v, move) for v in value)
    if isinstance(value, dict):
        return {k: moved(v, move) for k, v in value.items()}
    return value


def _copy_folders(shards: Shards, folder: Folder) -> Callable[[Any], Any]:
    """Copy every shard's run and repro folders into the merged report folder; how an event's
    paths become the copies' (a shard's events name its folders where it wrote them, on its
    own runner: any path ending in ``runs/<name>`` of a copied folder is moved)."""
    copied: dict[str, str] = {}
    for report in shards.reports:
        for name in KEPT:
            source = report.folder / name
            if not source.is_dir():
                continue
            for child in sorted(source.iterdir()):
                target = folder() / name / child.name
                shutil.copytree(child, target, dirs_exist_ok=True, symlinks=True)
                copied[f"{name}/{child.name}"] = str(target)
    if not copied:
        return lambda event: event
    where = re.compile(r"(?<![^\s'\"=])(?:[^\s'\"=]*/)?("
                      + "|".join(re.escape(k) for k in sorted(copied, key=len, reverse=True))
                      + r")(?![^\s'\"/])")

    def move(text: str) -> str:
        return where.sub(lambda m: copied[m.group(1)], text)

    return lambda event: moved(event, move)


@entry_point
def run_merge(shards: Shards, *, folder: Folder, live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness merge``: one run's events from its shards' report folders."""
    targets = dict.fromkeys(t for r in shards.reports for t in r.results.targets)
    # certify's shard locks, refused before the report begins
    locks = shard_locks([r.folder for r in shards.reports], shards.lock)
    yield Begin(targets=tuple(targets))
    total = shards.reports[0].info.total
    live.say(f"merge: {total} shards of {shards.command} "
             f"({', '.join(str(r.folder) for r in shards.reports)})")
    events = merged_events(shards)
    move = _copy_folders(shards, folder)
    yield from (move(e) for e in events)
    for note in dict.fromkeys(n for r in shards.reports for n in r.results.notes):
        yield Note(note)
    if locks is not None:  # certify's shards: their records, by pairing, into one lock
        merge_lock(locks, shards.lock, live)
