"""``failover-harness check``: the main job — prove the store's promises and print the verdicts."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.store import open_store
from harness.store.conformance import run_conformance

HELP = "run the main job: the store's conformance checks on the embedded store (or --db)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="URL",
        help="store to check: sqlite:///path or postgresql://… (default: a temporary SQLite file)",
    )
    parser.add_argument("--json", action="store_true", help="machine output on stdout")
    parser.add_argument("--quiet", action="store_true", help="print only failures")


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="failover-harness-") as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'check.db'}"
        store = open_store(url)
        try:
            results = run_conformance(store)
        finally:
            store.close()
    failed = [r for r in results if not r.passed]
    if args.json:
        json.dump(
            {
                "store": store.backend,
                "verdict": "fail" if failed else "pass",
                "checks": [r.__dict__ for r in results],
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 1 if failed else 0
    console = Console()
    table = Table(title=f"store conformance ({store.backend})")
    table.add_column("check")
    table.add_column("promise")
    table.add_column("verdict")
    table.add_column("evidence")
    for r in results:
        if args.quiet and r.passed:
            continue
        verdict = "[green]holds[/green]" if r.passed else "[red]BROKEN[/red]"
        table.add_row(r.name, r.promise, verdict, r.detail)
    if table.rows:
        console.print(table)
    summary = f"{len(results) - len(failed)} of {len(results)} promises hold"
    console.print(f"[red]{summary}[/red]" if failed else f"[green]{summary}[/green]")
    return 1 if failed else 0
