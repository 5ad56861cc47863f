"""`failover-harness certify`: certify the chains' providers against their contracts.

Writes ``providers.lock.json`` and the report folder (a certification record per provider and
contract, with the evidence, the bounds and the drift since the last lock). Exit 0 when every
``auto`` link's provider is eligible, 1 when one is ineligible, 3 when none is ineligible but one
is undecided (its confidence bounds straddle the threshold: sample more, e.g. with
``--adaptive``), 2 for bad input.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.commands._report import add_report_options, open_session
from harness.console import console
from harness.contracts.certifier import (
    DEFAULT_CONCURRENCY,
    CertificationRun,
    PostAudit,
    certify,
    plan,
)
from harness.contracts.emit import certification
from harness.contracts.exchange import Mode
from harness.contracts.judgement import Pairing
from harness.contracts.records import CertificationRecord
from harness.contracts.standing import certify_command
from harness.gateways.options import add_gateway_options, gateway_options
from harness.gateways.sources import audits_for, open_workspace

HELP = "Certify fallback providers against their contracts and write the lock file"
EXITS = {
    0: "every provider of an auto link is eligible",
    1: "a provider of an auto link is ineligible",
    3: "none ineligible, but one undecided (sample more: --adaptive)",
}
EXAMPLES = (
    ("certify live, sampling in rounds until every verdict is decided",
     "failover-harness certify --adaptive"),
    ("certify offline from recorded cassettes", "failover-harness certify --replay"),
)


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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_gateway_options(parser)  # --contract-map, --via, --header: for a gateway
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    ws = open_workspace(args.providers, args.contracts, args.lock, **gateway_options(args))
    pairings = plan(
        ws.providers, ws.contracts, only_provider=args.provider, only_contract=args.contract,
        providers_path=str(args.providers),
    )
    mode: Mode = "record" if args.record else "replay" if args.replay else "live"
    cassettes = args.cassettes or ws.cassettes_dir
    undecidable = ws.undecidable([p.contract for p in pairings])
    args.adaptive = args.adaptive or any(c.adaptive_decides for c in undecidable)
    if args.adaptive:  # the most it may spend; a decided provider stops early
        total = sum(t.contract.thresholds.budget_for(len(t.contract.goldens)) for t in pairings)
    else:
        total = sum(len(t.contract.goldens) * t.contract.thresholds.samples for t in pairings)
    # through a gateway: what the provider got, and what a config in a header makes it send
    audits = audits_for(ws.providers, pairings, ws.providers_path)
    session = open_session(args, "certify")  # before certifying: its start time is the run's
    for check in undecidable:  # said at load, before any call is spent
        session.say(f"note: {check.text()}")
    previous = dict(ws.lock.records)  # drift: what changed since the last certification
    result = _certify(args, pairings, mode, cassettes, total, previous, audits)
    # A record no call reached is no evidence: it never replaces an earlier one in the lock
    # (written only where the lock has none, so the gate says why the pair is undecided).
    # Merged into the lock as it is now, under a file lock: a concurrent run keeps its records.
    # A record a harness error left undecided (our bug, not evidence) is never written.
    evidence = ws.lock.commit(result.records)
    failover = {(t.provider.id, t.contract.id): t.failover for t in pairings}
    how: str = "replayed from cassettes" if args.replay else mode
    fakes = sum(1 for r in result.records if r.fake)
    if fakes and not args.replay:  # a fake provider answers in process: nothing is "live"
        how = ("fake providers" if fakes == len(result.records)
               else f"{how}; {fakes} of {len(result.records)} fake providers")
    rule = "adaptive, mixture SPRT" if args.adaptive else "fixed, Clopper–Pearson"
    session.say(f"certification ({how}; {rule})")
    for record in result.records:
        link = failover.get(record.key, "")
        command = certify_command(record.provider, record.contract, str(args.providers),
                                  args.contracts and str(args.contracts), adaptive=args.adaptive,
                                  lock=args.lock and str(args.lock))
        fix = ws.fix_for(record, command)
        session.emit(certification(record, link, fix=fix, gated=link == "auto"))
    session.say(f"{result.calls} calls in {result.wall_s:.2f} s (their latencies sum to "
                f"{result.sequential_s:.2f} s); lock file {ws.lock.path}"
                + ("" if evidence else " not changed"))
    for path in result.cassettes_written:
        session.say(f"cassette {path}")
    return session.finish()



def _certify(
    args: argparse.Namespace, pairings: list[Pairing], mode: Mode, cassettes: Path, total: int,
    previous: dict[tuple[str, str], CertificationRecord], audits: list[PostAudit],
) -> CertificationRun:
    """Run the certification under a progress bar (on a terminal, unless --no-progress)."""
    err = console(stderr=True)
    with Progress(
        TextColumn("certifying" + (" (adaptive: at most)" if args.adaptive else "")),
        BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=args.no_progress or not err.is_terminal,
    ) as progress:
        task = progress.add_task("exchanges", total=total)
        return asyncio.run(certify(
            pairings, mode=mode, cassettes=cassettes, concurrency=args.concurrency,
            on_progress=lambda n: progress.advance(task, n), adaptive=args.adaptive,
            previous=previous, audits=audits,
        ))
