"""`failover-harness gate`: refuse a providers config whose auto links lack a valid certification.

Exit 0 when every ``auto`` link is certified at its current config and contract hash; 1 when
one was certified ineligible; 3 when one is missing, stale or expired (unknown is not failed);
2 for bad input. Writes the report folder like every judging command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.campaign.gate import GateSettings, run_gate
from harness.commands._gateway import add_gateway_options, providers_source
from harness.commands._report import add_report_options, bound, play

HELP = "Check that every auto failover link is certified at its current config (for CI)"
EXITS = {
    0: "every auto link is certified at its current config and contract",
    1: "an auto link's provider was certified ineligible",
    3: "an auto link's certification is missing, stale, expired or undecided",
}
EXAMPLES = (
    ("gate the committed providers.yaml against providers.lock.json",
     "failover-harness gate --providers providers.yaml"),
    ("gate a LiteLLM config", "failover-harness gate --providers litellm:config.yaml"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--providers", type=Path, default=Path("providers.yaml"), metavar="FILE",
                        help="the providers file (default: providers.yaml)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="the contracts folder (default: contracts/ beside the providers file)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="the lock file (default: <providers>.lock.json beside it)")
    add_gateway_options(parser, via=False)  # --contract-map; gate never calls a provider
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    return play(args, "gate", bound(run_gate, GateSettings(source=providers_source(args))))
