"""`failover-harness certify`: certify the chains' providers against their contracts."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

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
    from rich.table import Table

    from harness.console import console, markup, text
    from harness.contracts.certifier import certify, plan
    from harness.contracts.exchange import Mode
    from harness.contracts.report import write_reports
    from harness.contracts.standing import certify_command
    from harness.contracts.workspace import open_workspace

    ws = open_workspace(args.providers, args.contracts, args.lock, **gateway_options(args))
    targets = plan(
        ws.providers, ws.contracts, only_provider=args.provider, only_contract=args.contract,
        providers_path=str(args.providers),
    )
    mode: Mode = "record" if args.record else "replay" if args.replay else "live"
    cassettes = args.cassettes or ws.cassettes_dir
    total = sum(len(t.contract.goldens) * t.contract.thresholds.samples for t in targets)
    err = console(stderr=True)
    with Progress(
        TextColumn("certifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=args.no_progress or not err.is_terminal,
    ) as progress:
        task = progress.add_task("exchanges", total=total)
        result = asyncio.run(certify(
            targets, mode=mode, cassettes=cassettes, concurrency=args.concurrency,
            on_progress=lambda n: progress.advance(task, n),
        ))
    ws.lock.merge(result.records)
    ws.lock.write()
    failover = {(t.provider.id, t.contract.id): t.failover for t in targets}
    reports = write_reports(result.records, args.report, failover=failover)

    # Reasons quote model answers and contract text: printed as text, never markup.
    out = console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)
    table = Table(title=f"certification ({'replayed from cassettes' if args.replay else mode})")
    for column in ("contract", "provider", "link", "verdict", "why"):
        table.add_column(column)
    for r in result.records:
        style = "green" if r.verdict == "eligible" else "red"
        table.add_row(text(r.contract), text(r.provider), failover.get(r.key, "?"),
                      text(r.verdict, style), text(r.why(), one_line=True))
    out.print(table)
    out.print(text(f"{result.calls} calls in {result.wall_s:.2f} s (their latencies sum to "
              f"{result.sequential_s:.2f} s); lock file {ws.lock.path}; report {reports[0]}"),
              soft_wrap=True)
    for path in result.cassettes_written:
        out.print(text(f"cassette {path}"))
    bad = result.ineligible_auto()
    for target, record in bad:
        out.print(markup(
            "[red]ineligible[/] provider {provider!r} in an auto link for contract {contract!r}: "
            "{why}\n  fix: make it meet the contract or set 'failover: manual' on the link, then "
            "run: {command}", provider=target.provider.id, contract=target.contract.id,
            why=record.why(), command=certify_command(
                target.provider.id, target.contract.id, str(args.providers)),
        ), soft_wrap=True)
    return 1 if bad else 0
