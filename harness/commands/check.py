"""``failover-harness check``: the main job, in one run and one report.

1. the shipped scenarios against the reference store and every mutant (the detection matrix),
   on the embedded SQLite store unless ``--db`` names another database;
2. certification of every provider the chains in ``providers.yaml`` name (the shipped example
   uses in-process fake providers, so this runs offline), written to ``providers.lock.json``;
3. the gate's verdict on the auto-failover links.

Everything lands in ``reports/<UTC time>/`` (results.json, junit.xml, summary.md, index.html)
with ``reports/latest`` pointing at it. Exit 0 when everything holds, 1 on a violation (a
scenario broken on the reference store, a mutant not caught, an ineligible auto link), 3 when
nothing is broken but a verdict is unknown (a certification missing, stale or expired), 2 for
bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.gateways.options import add_gateway_options, gateway_options

HELP = "the main job: scenarios + detection matrix, certification and gate, with a report"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--providers", type=Path, default=Path("providers.yaml"), metavar="FILE",
                        help="providers file to certify and gate (default: providers.yaml)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="contracts folder (default: contracts/ beside the providers file)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="lock file (default: providers.lock.json beside the providers file)")
    parser.add_argument("--scenarios", type=Path, nargs="*", default=[Path("scenarios")],
                        metavar="PATH", help="scenario files or folders (default: scenarios/)")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="database for the scenario runs: sqlite:///file.db or "
                        "postgresql://… (default: a temporary SQLite file)")
    parser.add_argument("--seed", type=int, default=None, help="scenario seed override")
    parser.add_argument("--no-certify", action="store_true",
                        help="do not certify: gate on the lock file as it is")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"), metavar="DIR",
                        help="where the run folder goes (default: reports)")
    parser.add_argument("--json", action="store_true", help="print results.json on stdout")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the verdict")
    add_gateway_options(parser)  # --contract-map, --via: for a LiteLLM config


def run(args: argparse.Namespace) -> int:
    from harness.console import console
    from harness.reports import RunReport, write_report

    started = datetime.now(UTC)
    # Progress on stderr; results on stdout. NO_COLOR is honoured by rich itself. Foreign text
    # (answers, reasons, service errors) is printed as text, never markup (harness.console).
    err = console(stderr=True)
    out = console(file=sys.stdout, width=None if sys.stdout.isatty() else 120, quiet=args.json)
    show_progress = err.is_terminal and not args.quiet and not args.json

    workspace = _open_workspace(args)  # bad config fails here, before any work
    scenarios, matrix, exit_codes = _scenarios(args, err, show_progress)
    certs, gate = _certification(args, workspace, err, show_progress)
    if gate is not None:
        exit_codes.append(gate.exit_code)
    code = 1 if 1 in exit_codes else 3 if 3 in exit_codes else 0
    report = RunReport(
        verdict={0: "pass", 1: "fail", 3: "unknown"}[code],  # type: ignore[arg-type]
        exit_code=code,
        started_at=_stamp(started),
        finished_at=_stamp(datetime.now(UTC)),
        harness_version=__version__,
        command="check",
        store=_redact(args.db) if args.db else "sqlite (embedded, temporary file)",
        scenarios=tuple(scenarios),
        matrix=matrix,
        certifications=tuple(certs),
        gate=gate,
    )
    folder = write_report(report, args.report_dir)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        _print_summary(out, report, folder, quiet=args.quiet)
    return code


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _redact(url: str) -> str:
    from harness.scenarios.targets.base import redact

    return redact(url)


def _open_workspace(args: argparse.Namespace) -> Any:
    if args.no_certify and not args.providers.exists():
        return None
    from harness.contracts.workspace import open_workspace

    return open_workspace(args.providers, args.contracts, args.lock, **gateway_options(args))


def _progress(err: Any, label: str, total: int, enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True, disable=not enabled)
    return progress, progress.add_task(label, total=total)


def _scenarios(args: argparse.Namespace, err: Any, show: bool) -> tuple[list[Any], Any, list[int]]:
    from harness.commands._collect import matrix_report, scenario_report
    from harness.scenarios.loader import load_scenario, scenario_files
    from harness.scenarios.matrix import REFERENCE, detection_matrix
    from harness.scenarios.runfolder import replay_command, write_run
    from harness.store.mutants import MUTANTS

    scenarios = [load_scenario(f) for f in scenario_files(args.scenarios)]
    progress, task = _progress(err, "scenarios × stores", len(scenarios) * (1 + len(MUTANTS)), show)
    with progress:
        matrix = detection_matrix(scenarios, args.db, seed=args.seed,
                                  on_cell=lambda _store, _result: progress.advance(task))
    reports, codes = [], []
    target = args.db or "sqlite"
    for scenario in scenarios:
        result = matrix.cells[(REFERENCE, scenario.name)]
        replay = None
        if result.status in ("violated", "unknown"):
            folder = write_run(result, args.report_dir)
            replay = replay_command(folder, target)
        reports.append(scenario_report(result, replay=replay))
        codes.append({"violated": 1, "unknown": 3}.get(result.status, 0))
    if matrix.problems():
        codes.append(1)
    return reports, matrix_report(matrix), codes


def _certification(
    args: argparse.Namespace, workspace: Any, err: Any, show: bool
) -> tuple[list[Any], Any]:
    from harness.commands._collect import cert_report, gate_report

    if workspace is None:
        return [], None
    records: list[Any] = []
    failover: dict[tuple[str, str], str] = {}
    if not args.no_certify:
        from harness.contracts.certifier import certify, plan

        targets = plan(workspace.providers, workspace.contracts,
                       providers_path=str(args.providers))
        failover = {(t.provider.id, t.contract.id): t.failover for t in targets}
        total = sum(len(t.contract.goldens) * t.contract.thresholds.samples for t in targets)
        progress, task = _progress(err, "certifying", total, show)
        with progress:
            result = asyncio.run(certify(targets, on_progress=lambda n: progress.advance(task, n)))
        workspace.lock.merge(result.records)
        workspace.lock.write()
        records = list(result.records)
    else:
        for contract, chain in workspace.providers.chains.items():
            for link in chain:
                failover[(link.provider, contract)] = link.failover
    certs = [cert_report(r, failover.get((r.provider, r.contract), "")) for r in records]
    return certs, gate_report(workspace.gate())


def _print_summary(out: Any, report: Any, folder: Path, *, quiet: bool) -> None:
    from rich.table import Table

    from harness.console import markup, text

    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}
    style = {"passed": "green", "failed": "red", "unknown": "yellow", "not_applicable": "dim",
             "eligible": "green", "ineligible": "red"}
    table = Table(title="scenarios on the reference store", title_justify="left")
    for column in ("scenario", "verdict", "virtual", "wall", "what broke"):
        table.add_column(column)
    for s in report.scenarios:
        if quiet and s.verdict in ("passed", "not_applicable"):
            continue
        broke = "; ".join(v for c in s.checks for v in c.violations[:1]) or s.reason
        table.add_row(text(s.name), text(s.verdict, style[s.verdict]), f"{s.virtual_s:g} s",
                      f"{s.wall_s * 1000:.0f} ms", text(broke))
    if table.rows:
        out.print(table)
    for s in report.scenarios:
        if s.replay_command:
            out.print(text(f"  reproduce {s.name}: {s.replay_command}"), soft_wrap=True)
    if report.matrix:
        m = report.matrix
        mutants = [t for t in m.targets if t != m.reference]
        missed = [t for t in mutants if not m.caught(t)]
        line = f"detection matrix: {len(mutants) - len(missed)} of {len(mutants)} mutants caught"
        line += f"; missed: {', '.join(missed)}" if missed else ""
        line += "; reference flagged!" if m.caught(m.reference) else "; reference clean"
        out.print(text(line, "red" if missed or m.caught(m.reference) else "green"))
    if report.certifications:
        certs = Table(title="certification", title_justify="left")
        for column in ("contract", "provider", "link", "verdict", "failed checks"):
            certs.add_column(column)
        for c in report.certifications:
            if quiet and c.verdict == "eligible":
                continue
            failed = "; ".join(f"{k.name}: {k.summary}" for k in c.checks if k.verdict == "fail")
            verdict = text(c.verdict, style.get(c.verdict, "yellow"))
            if ", " in c.mode:  # "live, fake provider (answers from the golden file)"
                verdict.append(text(f" — {c.mode.split(', ', 1)[1]}"))
            certs.add_row(text(c.contract), text(c.provider), c.failover, verdict, text(failed))
        if certs.rows:
            out.print(certs)
    if report.gate:
        g = report.gate
        out.print(markup(f"gate: [{colour[g.verdict]}]{{}}[/] ({{}} auto link(s))", g.verdict,
                         g.links_checked))
        for p in g.problems:
            out.print(text(f"  {p.state.upper()}: {p.provider} / {p.contract}: {p.why}\n"
                           f"    fix: {p.fix}"),
                      soft_wrap=True)
    out.print(text(f"report: {folder / 'index.html'} (also results.json, junit.xml, summary.md)"),
              soft_wrap=True)
    out.print(markup(f"[bold {colour[report.verdict]}]check: {{}}[/] (exit {{}})",
                     report.verdict.upper(), report.exit_code))

