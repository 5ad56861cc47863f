"""The report sessions a command left unfinished, and what becomes of their folders after bad
input, an interrupt or the command's end.

Apart from :mod:`harness.reports.session` so that the CLI, which calls these after every
command, does not import the renderers (and the result model) when the command wrote no report.
"""

from __future__ import annotations

import os
import shutil
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the session registers itself here; this module only reads its folder
    from harness.reports.session import ReportSession

#: the sessions of this process that began a folder and have not finished it
UNFINISHED: weakref.WeakSet[ReportSession] = weakref.WeakSet()


def discard_unused() -> list[Path]:
    """After bad input (exit 2): remove the folder of every session that never finished and
    holds nothing written (no file with content in it), and the report folder above it when
    the run created it and it is empty now — bad input writes nothing. A folder with a log in
    it (a service that would not start) stays: the message points there. Returns what went."""
    removed = []
    for session in list(UNFINISHED):
        folder = session._folder
        if folder is None or not folder.exists() or any(
                p.is_file() and p.stat().st_size for p in folder.rglob("*")):
            continue
        UNFINISHED.discard(session)
        shutil.rmtree(folder)
        removed.append(folder)
        parent = session.report_dir
        if session._made_report_dir and parent is not None and not any(parent.iterdir()):
            parent.rmdir()
            removed.append(parent)
    return removed


def forget_unfinished() -> None:
    """At the end of a command: a session it left unfinished (a folder kept for the log the
    message points at) is no longer this process's to rename, so a later command run in the
    same process (a test, an embedding program) never touches it."""
    UNFINISHED.clear()


def abandon_unfinished() -> list[Path]:
    """After an interrupt: rename the folder of every session that never finished to
    ``<name>.interrupted`` (no results in it; ``latest`` never pointed there), so no folder
    looks like a report that it is not. Returns the new names."""
    moved = []
    for session in list(UNFINISHED):
        folder = session._folder
        UNFINISHED.discard(session)
        if folder is not None and folder.exists():
            target = folder.with_name(f"{folder.name}.interrupted")
            os.replace(folder, target)
            moved.append(target)
    return moved
