"""`failover-harness gate`: refuse a providers config whose auto links lack a valid certification.

Exit 0 when every ``auto`` link is certified at its current config and contract hash; 1 when
one was certified ineligible; 3 when one is missing, stale or expired (unknown is not failed);
2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.gateways.options import add_gateway_options, gateway_options

HELP = "check that every auto failover link has a valid certification (for CI)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--providers", type=Path, default=Path("providers.yaml"), metavar="FILE",
                        help="the providers file (default: providers.yaml)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="the contracts folder (default: contracts/ beside the providers file)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="the lock file (default: <providers>.lock.json beside it)")
    add_gateway_options(parser)  # --contract-map, --via: for a LiteLLM config


def run(args: argparse.Namespace) -> int:
    from harness.console import echo  # the reasons quote records and files: printed as text
    from harness.contracts.records import FAKE_PROVENANCE
    from harness.contracts.standing import State  # lazily: keep `--help` fast
    from harness.contracts.workspace import open_workspace

    ws = open_workspace(args.providers, args.contracts, args.lock, **gateway_options(args))
    standings = ws.gate()
    problems = [s for s in standings if s.state is not State.CERTIFIED]
    for s in problems:
        echo(f"{s.state.upper()}: provider {s.provider!r}, contract {s.contract!r}: {s.why}")
        echo(f"  fix: {s.fix}")
    if not standings:
        echo(f"gate: no auto failover links in {args.providers}; nothing to certify")
        return 0
    fakes = [s for s in standings if s.state is State.CERTIFIED and FAKE_PROVENANCE in s.why]
    if fakes:  # an honest demo: a fake's "certified" is not evidence about a model
        echo(f"note: {', '.join(repr(s.provider) for s in fakes)} certified as a "
             f"{FAKE_PROVENANCE}: not evidence about a real model")
    if not problems:
        echo(f"gate: ok — {len(standings)} auto link(s) certified at their current config and "
              f"contract ({ws.lock.path})")
        return 0
    code = 1 if any(s.state is State.FAILED for s in problems) else 3
    counts = {state: sum(1 for s in problems if s.state is state) for state in State}
    summary = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
    print(f"gate: {len(problems)} of {len(standings)} auto link(s) not certified ({summary})",
          file=sys.stderr)
    return code
