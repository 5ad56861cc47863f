"""Typed events → handlers: how a command reports (the way schemathesis does it).

A command opens a :class:`ReportSession`, emits events as it judges, and finishes it::

    session = ReportSession("scenarios run", handlers=[...], report_dir=Path("reports"))
    session.start(invocation="failover-harness scenarios run …", targets=["sqlite"])
    session.emit(ScenarioRun(...))        # every handler sees it at once (the live CLI prints)
    code = session.finish()               # Results → results.json, junit.xml, summary.md, …

Each handler has ``start(header)``, ``handle(event)``, ``progress(text)`` and ``finish(results)``
(:class:`Handler`); the live CLI output (:mod:`harness.reports.live`), the report folder
(:class:`FolderWriter`), ``--junit FILE`` and ``--json`` are handlers. Every event is scrubbed of
secrets before any handler sees it (:mod:`harness.reports.redaction`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from harness import __version__
from harness.domain.redaction import redact, redact_data
from harness.domain.shard import ShardStamp
from harness.reports.html import render_html
from harness.reports.junit import render_junit
from harness.reports.markdown import render_markdown
from harness.reports.model import EXIT_CODES, Event, Results, ShardInfo, run_verdict
from harness.reports.redaction import clean, scrub
from harness.reports.unfinished import UNFINISHED

FILES = ("results.json", "junit.xml", "summary.md", "index.html")


def stamp(when: datetime) -> str:
    """RFC 3339 UTC with microseconds, as every report writes times."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Header:
    """What a run is, known when it starts."""

    command: str
    started_at: str
    invocation: str = ""
    targets: tuple[str, ...] = ()


class Handler:
    """Consumes a run's events; every method may be left as is."""

    def start(self, header: Header) -> None:
        """The run started."""

    def handle(self, event: Event) -> None:
        """One event, as it happens."""

    def progress(self, text: str) -> None:
        """A progress line (not part of the results)."""

    def finish(self, results: Results) -> None:
        """The run ended; ``results`` holds every event."""


class ReportSession:
    """One command's run: emits events to handlers, builds :class:`Results`, owns the folder.

    The report folder ``<report_dir>/<UTC time>/`` is created on first use (:attr:`folder`), so
    run folders and repro folders written during the run land inside it, and a command that
    fails on bad input before judging anything leaves nothing behind.
    """

    def __init__(self, command: str, *, handlers: Iterable[Handler] = (),
                 report_dir: Path | None = Path("reports"),
                 now: datetime | None = None) -> None:
        self.command = command
        self.handlers = list(handlers)
        self.report_dir = report_dir
        self.started = now or datetime.now(UTC)
        self.events: list[Event] = []
        self.notes: list[str] = []
        self.header: Header | None = None
        self.results: Results | None = None
        self.stamp: ShardStamp | None = None  # a shard of a run: what it records
        self.order: tuple[str, ...] = ()
        self.evidence: dict[int, dict[str, Any]] = {}  # event index → what merge judges again
        self._folder: Path | None = None
        self._made_report_dir = False  # the run created report_dir (removed with an unused folder)

    # -- the folder -----------------------------------------------------------------------------
    @property
    def folder(self) -> Path:
        """``<report_dir>/<UTC time>/``, created now if it does not exist yet (a run writes its
        run and repro folders into it; until :meth:`finish` it holds no results.json, and an
        interrupted run's folder is renamed ``….interrupted`` by
        :func:`~harness.reports.unfinished.abandon_unfinished`)."""
        if self._folder is None:
            self._folder = self._new_folder()
            self._folder.mkdir()
            UNFINISHED.add(self)
        return self._folder

    def _new_folder(self) -> Path:
        """A free ``<report_dir>/<UTC time>[-n]`` (not created)."""
        if self.report_dir is None:
            raise RuntimeError("this session writes no report folder")
        self._made_report_dir = self._made_report_dir or not self.report_dir.exists()
        self.report_dir.mkdir(parents=True, exist_ok=True)
        name = self.started.strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
        candidate, n = self.report_dir / name, 2
        while candidate.exists() or candidate.with_name(f".{candidate.name}.partial").exists():
            candidate, n = self.report_dir / f"{name}-{n}", n + 1
        return candidate

    def write_file(self, name: str, data: object) -> Path:
        """A file of the run's own (``drill.json``) in the report folder: JSON data (or text),
        scrubbed of every secret like the renderings, replaced atomically. Returns its path."""
        if isinstance(data, str):
            text = data
        else:
            text = json.dumps(redact_data(data), indent=2, ensure_ascii=False) + "\n"
        path = self.folder / name
        _write_atomically(path, redact(text))
        return path

    def publish(self, results: Results) -> Path:
        """Write the renderings and return the folder. A folder the run did not use yet is
        built under a temporary name and renamed into place whole."""
        if self._folder is None:
            final = self._new_folder()
            partial = final.with_name(f".{final.name}.partial")
            try:
                write_renderings(results, partial)
                os.replace(partial, final)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            self._folder = final
        else:
            write_renderings(results, self._folder)
        UNFINISHED.discard(self)
        return self._folder

    # -- the run --------------------------------------------------------------------------------
    def start(self, *, invocation: str = "", targets: Iterable[str] = ()) -> Header:
        self.header = Header(self.command, stamp(self.started), clean(invocation),
                             tuple(clean(t) for t in targets))
        for handler in self.handlers:
            handler.start(self.header)
        return self.header

    def add_target(self, target: str) -> None:
        """A target learnt after the start (shown in the header of every rendering)."""
        header = self.header or self.start()
        text = clean(target)
        if text not in header.targets:
            self.header = Header(header.command, header.started_at, header.invocation,
                                 (*header.targets, text))

    def emit(self, event: Event) -> Event:
        """Scrub ``event`` of secrets, record it and hand it to every handler; return it."""
        if self.header is None:
            self.start()
        event = scrub(event)
        self.events.append(event)
        for handler in self.handlers:
            handler.handle(event)
        return event

    def say(self, text: str) -> None:
        """A progress line for the live output (not part of the results)."""
        text = clean(text)
        for handler in self.handlers:
            handler.progress(text)

    def sharded(self, stamp: ShardStamp, order: tuple[str, ...] = ()) -> None:
        """This run is a shard of a run: results.json records its stamp (``shard``)."""
        self.stamp, self.order = stamp, order

    def attach_evidence(self, data: dict[str, Any]) -> None:
        """What ``merge`` judges the last event again from (scrubbed like the event)."""
        if not self.events:
            raise RuntimeError("shard evidence comes after the event it belongs to")
        self.evidence[len(self.events) - 1] = scrub(data)

    def shard_info(self) -> ShardInfo | None:
        if self.stamp is None:
            return None
        stamp = self.stamp
        return ShardInfo(
            index=stamp.shard.index, total=stamp.shard.total, job=stamp.job,
            run_digest=stamp.run_digest, inputs=dict(stamp.inputs), order=self.order,
            evidence=tuple(self.evidence.get(n) for n in range(len(self.events))))

    def note(self, text: str) -> None:
        """A line every rendering shows at its end."""
        self.notes.append(clean(text))

    def finish(self) -> int:
        """Build the results, hand them to every handler, and return the exit code."""
        header = self.header or self.start()
        verdict = run_verdict(self.events)
        self.results = Results(
            command=self.command, verdict=verdict, exit_code=EXIT_CODES[verdict],
            started_at=header.started_at, finished_at=stamp(datetime.now(UTC)),
            harness_version=__version__, invocation=header.invocation,
            targets=header.targets, events=tuple(self.events), notes=tuple(self.notes),
            shard=self.shard_info(),
        )
        for handler in self.handlers:
            handler.finish(self.results)
        return self.results.exit_code


# -- handlers that write files ------------------------------------------------------------------
def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def render_json(results: Results) -> str:
    """``results.json``: the results scrubbed (no secret, no raw escape, encodable as UTF-8)."""
    return json.dumps(scrub(results).to_json(), indent=2, ensure_ascii=False) + "\n"


def write_renderings(results: Results, folder: Path) -> None:
    """The four renderings of ``results`` into ``folder`` (each file replaced atomically)."""

    folder.mkdir(parents=True, exist_ok=True)
    _write_atomically(folder / "results.json", render_json(results))
    _write_atomically(folder / "junit.xml", render_junit(results))
    _write_atomically(folder / "summary.md", render_markdown(results))
    _write_atomically(folder / "index.html", render_html(results))


def point_latest(report_dir: Path, folder: Path) -> str | None:
    """``<report_dir>/latest`` → ``folder``: a relative symlink, replaced atomically (a
    reader sees the old report or the new one, never none). A ``latest`` that is a real folder
    (a report copied there, e.g. a CI artifact download) is moved aside, never silently left
    stale: the returned sentence says where it went (None when there was nothing to say)."""
    link = report_dir / "latest"
    said = None
    if link.exists() and not link.is_symlink():
        aside = link.with_name(f"latest.replaced-{folder.name}")
        os.replace(link, aside)
        said = (f"{link} was a folder, not a link (a copied report?): moved to {aside}; "
                f"{link} now points at {folder.name}")
    tmp_link = report_dir / f".latest-{folder.name}"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(folder.name)
    os.replace(tmp_link, link)
    return said


class FolderWriter(Handler):
    """Writes the report folder at the end and points ``latest`` at it."""

    def __init__(self, session: ReportSession) -> None:
        self.session = session
        self.written: Path | None = None

    def finish(self, results: Results) -> None:
        folder = self.session.publish(results)
        assert self.session.report_dir is not None
        said = point_latest(self.session.report_dir, folder)
        if said:
            print(f"note: {said}", file=sys.stderr)
        self.written = folder


class JunitFile(Handler):
    """``--junit FILE``: junit.xml also written where CI looks for it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def finish(self, results: Results) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.path, render_junit(results))


@dataclass
class JsonOut(Handler):
    """``--json``: results.json on a stream (stdout) at the end."""

    stream: IO[str] = field(default_factory=lambda: sys.stdout)

    def finish(self, results: Results) -> None:
        self.stream.write(render_json(results))
        self.stream.flush()


def write_report(results: Results, report_dir: Path) -> Path:
    """Write ``results`` as a new report folder under ``report_dir`` (built under a temporary
    name, renamed into place); point ``latest`` at it; return the folder."""
    folder = ReportSession(results.command, report_dir=report_dir).publish(results)
    point_latest(report_dir, folder)
    return folder
