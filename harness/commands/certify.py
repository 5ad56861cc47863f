"""`failover-harness certify`: certify the chains' providers against their contracts.

Writes ``providers.lock.json`` and the report folder (a certification record per provider and
contract, with the evidence, the bounds and the drift since the last lock). Exit 0 when every
``auto`` link's provider is eligible, 1 when one is ineligible, 3 when none is ineligible but one
is undecided (its confidence bounds straddle the threshold: sample more, e.g. with
``--adaptive``), 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.campaign.certification import CertifySettings, run_certify
from harness.commands._gateway import add_gateway_options, providers_source
from harness.commands._report import add_report_options, bound, play
from harness.commands._shard import add_shard_option, shard_of
from harness.contracts.certifier import DEFAULT_CONCURRENCY

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
    ("certify shard 2 of 4 of the pairings in a CI matrix job (then: failover-harness merge)",
     "failover-harness certify --shard 2/4"),
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
    add_shard_option(parser, "the pairings, each whole, their records written to "
                     "shard.lock.json in the report folder, not to the lock file")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_gateway_options(parser)  # --contract-map, --via, --header: for a gateway
    add_report_options(parser)


def settings(args: argparse.Namespace) -> CertifySettings:
    return CertifySettings(
        source=providers_source(args), adaptive=args.adaptive,
        mode="record" if args.record else "replay" if args.replay else "live",
        cassettes=args.cassettes, provider=args.provider, contract=args.contract,
        concurrency=args.concurrency,
        shard=shard_of(args))


def run(args: argparse.Namespace) -> int:
    return play(args, "certify", bound(run_certify, settings(args)),
                bars=not args.no_progress)
