"""The report options every judging command takes, and the session that serves them.

``--report-dir DIR`` (the folder ``DIR/<UTC time>/`` and ``DIR/latest``), ``--json`` (results.json
on stdout; the live lines go to stderr), ``--junit FILE`` (junit.xml also there), ``--quiet``
(only what broke or is unknown, and the verdict) and ``--verbose`` (every detail as it
comes). A judging command builds its settings and calls :func:`play` with its engine's entry
point: the short loop that hands each message of the stream to the report session and returns
the session's exit code (it decides nothing; see :mod:`harness.domain.stream`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.console import console
from harness.domain.stream import (
    QUIET_BAR,
    AddTarget,
    Begin,
    Folder,
    Live,
    Note,
    ReportFile,
    Sharded,
    ShardEvidence,
    Stream,
)
from harness.reports.live import LiveOutput
from harness.reports.session import FolderWriter, Handler, JsonOut, JunitFile, ReportSession


def add_report_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reports")
    group.add_argument("--report-dir", type=Path, default=None, metavar="DIR",
                       help="the report folder goes to DIR/<UTC time>/, with DIR/latest "
                       "pointing at it (default: reports)")
    group.add_argument("--json", action="store_true",
                       help="print results.json on stdout (the live output goes to stderr)")
    group.add_argument("--junit", type=Path, default=None, metavar="FILE",
                       help="also write junit.xml to FILE (for CI test reporters)")
    group.add_argument("--quiet", action="store_true",
                       help="print only what broke or is unknown, and the verdict")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="print every violation with its history, every trial failure and "
                       "every statistic as it comes (the report folder always has them)")


def invocation(args: argparse.Namespace) -> str:
    argv = getattr(args, "_argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["failover-harness", *argv])


def open_session(args: argparse.Namespace, command: str, *, targets: Iterable[str] = (),
                 extra: Iterable[Handler] = ()) -> ReportSession:
    """A started session with the handlers ``args`` ask for: the report folder always, then
    ``--junit``, ``--json`` and the live output."""
    session = new_session(args, command, extra=extra)
    session.start(invocation=invocation(args), targets=targets)
    return session


def new_session(args: argparse.Namespace, command: str, *, extra: Iterable[Handler] = (),
                reports: Path | None = None) -> ReportSession:
    """A session with the handlers ``args`` ask for, not started yet (its folder under
    ``--report-dir``, else ``reports``, else ``reports/``)."""
    session = ReportSession(command, report_dir=(
        args.report_dir if getattr(args, "report_dir", None) is not None
        else reports if reports is not None else Path("reports")))
    writer = FolderWriter(session)
    handlers: list[Handler] = [writer]
    if getattr(args, "junit", None):
        handlers.append(JunitFile(args.junit))
    json_out = bool(getattr(args, "json", False))
    if json_out:
        handlers.append(JsonOut(sys.stdout))
    handlers.append(LiveOutput(sys.stderr if json_out else None,
                               quiet=bool(getattr(args, "quiet", False)),
                               verbose=bool(getattr(args, "verbose", False)),
                               folder=lambda: writer.written))
    handlers.extend(extra)
    session.handlers = handlers
    return session


class SessionLive:
    """The live progress of a session: its lines, and a bar on a terminal (none off one, in CI
    logs: not even the line a stopped bar prints; none with ``bars=False``)."""

    def __init__(self, session: ReportSession, *, bars: bool = True) -> None:
        self.session = session
        self.bars = bars

    def say(self, text: str) -> None:
        self.session.say(text)

    @contextmanager
    def bar(self, label: str, total: float) -> Iterator[Callable[[float], None]]:
        err = console(stderr=True)
        if not (self.bars and err.is_terminal):
            yield QUIET_BAR
            return
        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True) as progress:
            task = progress.add_task(label, total=total)

            def advance(n: float = 1) -> None:
                progress.advance(task, n)

            yield advance


def play(args: argparse.Namespace, command: str, job: Callable[[Folder, Live], Stream], *,
         bars: bool = True, reports: Path | None = None) -> int:
    """Run ``job`` (an entry point with its settings bound) and hand each message of its stream
    to a report session; the session's exit code. Run and repro folders go into the session's
    report folder, created when the job first writes one (``reports``: the folder's parent when
    there is no ``--report-dir``, e.g. the project file's)."""
    session = new_session(args, command, reports=reports)
    started = False
    for message in job(lambda: session.folder, SessionLive(session, bars=bars)):
        if isinstance(message, Begin) or not started:
            session.start(invocation=invocation(args),
                          targets=message.targets if isinstance(message, Begin) else ())
            started = True
            if isinstance(message, Begin):
                continue
        if isinstance(message, Note):
            session.note(message.text)
        elif isinstance(message, AddTarget):
            session.add_target(message.target)
        elif isinstance(message, ReportFile):
            session.write_file(message.name, message.data)
        elif isinstance(message, Sharded):
            session.sharded(message.stamp, message.order)
        elif isinstance(message, ShardEvidence):
            session.attach_evidence(message.data)
        else:
            session.emit(message)
    if not started:
        session.start(invocation=invocation(args))
    return session.finish()


def bound(entry: Callable[..., Stream], settings: Any) -> Callable[[Folder, Live], Stream]:
    """``entry(settings, folder=…, live=…)`` as :func:`play` calls it."""
    return lambda folder, live: entry(settings, folder=folder, live=live)
