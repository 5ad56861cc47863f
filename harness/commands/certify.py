"""`failover-harness certify`: certify the chains' providers against their contracts.

Exit 0 when every ``auto`` link's provider is eligible, 1 when one is ineligible, 3 when none
is ineligible but one is undecided (its confidence bounds straddle the threshold: sample more,
e.g. with ``--adaptive``), 2 for bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.gateways.options import add_gateway_options, gateway_options

DEFAULT_CONCURRENCY = 64  # harness.contracts.certifier.DEFAULT_CONCURRENCY (imported lazily)
HELP = "certify fallback providers against their contracts and write providers.lock.json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--providers", type=Path, default=Path("providers.yaml"), metavar="FILE",
                        help="the providers file (default: providers.yaml)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="the contracts folder (default: contracts/ beside the providers file)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true",
                      help="save every exchange as a cassette (to --cassettes)")
    mode.add_argument("--replay", action="store_true",
                      help="certify offline from cassettes; the records say 'replayed'")
    parser.add_argument("--adaptive", action="store_true",
                        help="sample in rounds until every provider is decided or the contract's "
                        "budget is spent (anytime-valid mixture SPRT; see docs/contracts.md)")
    parser.add_argument("--cassettes", type=Path, default=None, metavar="DIR",
                        help="cassette folder (default: cassettes/ beside the providers file)")
    parser.add_argument("--provider", default=None, metavar="ID", help="only this provider")
    parser.add_argument("--contract", default=None, metavar="ID", help="only this contract")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"calls in flight at most (default: {DEFAULT_CONCURRENCY})")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="the lock file to update (default: <providers>.lock.json beside it)")
    parser.add_argument("--report", type=Path, default=Path("reports/certification.md"),
                        metavar="FILE", help="Markdown report (and .json beside it)")
    parser.add_argument("--json", action="store_true",
                        help="print the results document (docs/results.md) on stdout, no table")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_gateway_options(parser)  # --contract-map, --via: for a LiteLLM config


def run(args: argparse.Namespace) -> int:
    # Imported here: `failover-harness --help` should not load tokenizers, httpx and the store.
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from harness.console import console
    from harness.contracts.certifier import certify, plan
    from harness.contracts.exchange import Mode
    from harness.contracts.report import write_reports
    from harness.contracts.workspace import open_workspace

    started = datetime.now(UTC)
    ws = open_workspace(args.providers, args.contracts, args.lock, **gateway_options(args))
    targets = plan(
        ws.providers, ws.contracts, only_provider=args.provider, only_contract=args.contract,
        providers_path=str(args.providers),
    )
    mode: Mode = "record" if args.record else "replay" if args.replay else "live"
    cassettes = args.cassettes or ws.cassettes_dir
    if args.adaptive:  # the most it may spend; a decided provider stops early
        total = sum(t.contract.thresholds.budget_for(len(t.contract.goldens)) for t in targets)
    else:
        total = sum(len(t.contract.goldens) * t.contract.thresholds.samples for t in targets)
    err = console(stderr=True)
    previous = dict(ws.lock.records)
    with Progress(
        TextColumn("certifying" + (" (adaptive: at most)" if args.adaptive else "")),
        BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
        disable=args.no_progress or args.json or not err.is_terminal,
    ) as progress:
        task = progress.add_task("exchanges", total=total)
        result = asyncio.run(certify(
            targets, mode=mode, cassettes=cassettes, concurrency=args.concurrency,
            on_progress=lambda n: progress.advance(task, n), adaptive=args.adaptive,
            previous=previous,
        ))
    ws.lock.merge(result.records)
    ws.lock.write()
    failover = {(t.provider.id, t.contract.id): t.failover for t in targets}
    reports = write_reports(result.records, args.report, failover=failover)
    code = result.exit_code
    if args.json:
        json.dump(_document(result, failover, ws, code, started), sys.stdout, indent=2,
                  ensure_ascii=False)
        print()
        return code
    out = console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)
    _print(out, args, result, failover, ws, reports, mode)
    return code


def _document(result: Any, failover: dict, ws: Any, code: int, started: datetime) -> dict:
    """The results document of this run: the certification records and the gate after it."""
    from harness import __version__
    from harness.commands._collect import cert_report, gate_report
    from harness.reports import RunReport

    report = RunReport(
        verdict={0: "pass", 1: "fail", 3: "unknown"}[code],  # type: ignore[arg-type]
        exit_code=code,
        started_at=_stamp(started),
        finished_at=_stamp(datetime.now(UTC)),
        harness_version=__version__,
        command="certify",
        certifications=tuple(cert_report(r, failover.get(r.key, "")) for r in result.records),
        gate=gate_report(ws.gate()),
    )
    return report.to_json()


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _print(
    out: Any, args: argparse.Namespace, result: Any, failover: dict, ws: Any,
    reports: list[Path], mode: str,
) -> None:
    """The table, the drift since the last certification, and what to do about problems."""
    from rich.table import Table

    from harness.console import markup, text
    from harness.contracts.drift import drift_lines
    from harness.contracts.standing import certify_command

    how = "replayed from cassettes" if args.replay else mode
    rule = "adaptive, mixture SPRT" if args.adaptive else "fixed, Clopper–Pearson"
    table = Table(title=f"certification ({how}; {rule})")
    for column in ("contract", "provider", "link", "verdict", "samples", "why"):
        table.add_column(column)
    style = {"eligible": "green", "ineligible": "red", "undecided": "yellow"}
    for r in result.records:
        sampled = f"{r.sampling.calls} (k={r.sampling.k})" if r.sampling else "-"
        table.add_row(text(r.contract), text(r.provider), failover.get(r.key, "?"),
                      text(r.verdict, style[r.verdict]), sampled, text(r.why(), one_line=True))
    out.print(table)
    for r in result.records:
        lines = drift_lines(r)
        if lines:
            since = r.drift["since"][:16].replace("T", " ") if r.drift else ""
            out.print(markup("[bold]drift[/] {p} × {c} since {since} ({prev}):", p=r.provider,
                             c=r.contract, since=since, prev=r.drift.get("previous_verdict")))
            for line in lines:
                out.print(text(f"  {line}"), soft_wrap=True)
    out.print(text(f"{result.calls} calls in {result.wall_s:.2f} s (their latencies sum to "
                   f"{result.sequential_s:.2f} s); lock file {ws.lock.path}; report "
                   f"{reports[0]}"), soft_wrap=True)
    for path in result.cassettes_written:
        out.print(text(f"cassette {path}"))
    for target, record in result.ineligible_auto():
        out.print(markup(
            "[red]ineligible[/] provider {provider!r} in an auto link for contract {contract!r}: "
            "{why}\n  fix: make it meet the contract or set 'failover: manual' on the link, then "
            "run: {command}", provider=target.provider.id, contract=target.contract.id,
            why=record.why(), command=certify_command(
                target.provider.id, target.contract.id, str(args.providers)),
        ), soft_wrap=True)
    for target, record in result.undecided_auto():
        command = certify_command(target.provider.id, target.contract.id, str(args.providers))
        out.print(markup(
            "[yellow]undecided[/] provider {provider!r} in an auto link for contract "
            "{contract!r}: {why}\n  fix: sample until decided: {command} --adaptive",
            provider=target.provider.id, contract=target.contract.id, why=record.why(),
            command=command,
        ), soft_wrap=True)
