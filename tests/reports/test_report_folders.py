"""Report folders appear whole, ``latest`` is a link swapped atomically, a ``latest`` that is
a real folder is said and replaced, and an interrupted run leaves no folder that looks like a
report."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.reports.session as session_module
from harness.cli import main
from harness.reports import write_report
from harness.reports.session import ReportSession
from harness.reports.unfinished import abandon_unfinished
from tests.reports.sample import sample_results


def test_a_real_latest_folder_is_said_and_replaced(tmp_path: Path, capsys) -> None:
    reports = tmp_path / "reports"
    (reports / "latest").mkdir(parents=True)
    (reports / "latest" / "summary.md").write_text("PASS (an old artifact)\n")
    root = Path(__file__).resolve().parents[2]
    main(["gate", "--providers", str(root / "providers.yaml"), "--lock",
          str(tmp_path / "none.lock.json"), "--report-dir", str(reports)])
    err = capsys.readouterr().err
    latest = reports / "latest"
    assert latest.is_symlink() and (latest / "results.json").is_file()
    assert "PASS (an old artifact)" not in (latest / "summary.md").read_text()
    aside = [p for p in reports.iterdir() if p.name.startswith("latest.replaced-")]
    assert len(aside) == 1 and (aside[0] / "summary.md").read_text() == "PASS (an old artifact)\n"
    assert "was a folder, not a link" in err and str(aside[0]) in err


def test_a_report_folder_appears_whole_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    def broken(results, folder):  # the disk fills up half-way through the renderings
        (folder / "results.json").parent.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text("{}")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_module, "write_renderings", broken)
    with pytest.raises(OSError):
        write_report(sample_results(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_sessions_folder_is_renamed_and_latest_untouched(tmp_path: Path) -> None:
    first = write_report(sample_results(), tmp_path)
    session = ReportSession("check", report_dir=tmp_path)
    (session.folder / "run-1").mkdir()  # a run folder written during the run, then Ctrl-C
    moved = abandon_unfinished()
    assert moved == [session.folder.with_name(session.folder.name + ".interrupted")]
    assert moved[0].is_dir() and not session.folder.exists()
    assert (tmp_path / "latest").resolve() == first.resolve()


def test_a_folder_a_command_left_is_not_renamed_by_a_later_interrupt(tmp_path: Path) -> None:
    left = ReportSession("check", report_dir=tmp_path / "first")  # kept for its log (exit 2)
    (left.folder / "service.log").write_text("the service would not start\n")
    root = Path(__file__).resolve().parents[2]
    main(["gate", "--providers", str(root / "providers.yaml"), "--lock",
          str(tmp_path / "none.lock.json"), "--report-dir", str(tmp_path / "second")])
    assert abandon_unfinished() == []  # the command ended: what it found is not its own
    assert left.folder.is_dir()
