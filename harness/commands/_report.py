"""The report options every judging command takes, and the session that serves them.

``--report-dir DIR`` (the folder ``DIR/<UTC time>/`` and ``DIR/latest``), ``--json`` (results.json
on stdout; the live lines go to stderr), ``--junit FILE`` (junit.xml also there), ``--quiet``
(only what broke or is unknown, and the verdict) and ``--verbose`` (every detail as it
comes). A command calls :func:`open_session`, emits its
events and returns ``session.finish()`` as its exit code.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

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


def report_dir(args: argparse.Namespace) -> Path:
    return args.report_dir if getattr(args, "report_dir", None) is not None else Path("reports")


def invocation(args: argparse.Namespace) -> str:
    argv = getattr(args, "_argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["failover-harness", *argv])


def open_session(args: argparse.Namespace, command: str, *, targets: Iterable[str] = (),
                 extra: Iterable[Handler] = ()) -> ReportSession:
    """A started session with the handlers ``args`` ask for: the report folder always, then
    ``--junit``, ``--json`` and the live output."""
    session = ReportSession(command, report_dir=report_dir(args))
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
    session.start(invocation=invocation(args), targets=targets)
    return session
