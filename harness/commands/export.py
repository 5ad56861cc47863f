"""`failover-harness export litellm-fallbacks | portkey-targets`: a gateway config's fallbacks,
certified ones only.

``portkey-targets`` prints the Portkey config (JSON) without the fallback or loadbalanced
targets that are not certified; the lines dropped, and why, go to stderr.

Prints LiteLLM YAML (``router_settings`` / ``litellm_settings`` with their fallback lists) that
holds only fallbacks certified for the contract of the group they stand in for, with a comment
per fallback dropped and why. Exit 0 when the config's lists already are the certified lists, 1
when some fallback had to be dropped (``gate`` fails on the same links), 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands._gateway import add_gateway_options, gateway_options
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.gateways.export import certified_lists, litellm_source, portkey_export
from harness.gateways.sources import open_workspace

HELP = ("Print a gateway config keeping only certified fallbacks: LiteLLM's fallback lists, "
        "or a Portkey config's targets")
EXITS = {
    0: "the config's lists already hold only certified fallbacks",
    1: "some fallback had to be dropped (gate fails on the same links)",
}
EXAMPLES = (
    ("the certified fallback lists of a LiteLLM config",
     "failover-harness export litellm-fallbacks --providers config.yaml"),
    ("a Portkey config with only certified targets",
     "failover-harness export portkey-targets --providers config.json"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=["litellm-fallbacks", "portkey-targets"],
                        help="litellm-fallbacks: the fallback lists of a LiteLLM config; "
                             "portkey-targets: a Portkey config's certified targets")
    parser.add_argument("--providers", type=Path, default=None, metavar="FILE",
                        help="the gateway's config (default: config.yaml, or config.json for "
                             "portkey-targets)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="the contracts folder (default: contracts/ beside the config)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="the lock file (default: <config>.lock.json beside it)")
    parser.add_argument("--output", type=Path, default=None, metavar="FILE",
                        help="write the YAML there instead of stdout")
    add_gateway_options(parser, via=False)  # --contract-map; export never calls a provider


def run(args: argparse.Namespace) -> int:
    portkey = args.what == "portkey-targets"
    prefix = "portkey:" if portkey else "litellm:"
    path = args.providers or Path("config.json" if portkey else "config.yaml")
    if not str(path).startswith(prefix):
        path = Path(f"{prefix}{path}")  # the reader of the config the export writes
    ws = open_workspace(path, args.contracts, args.lock, **gateway_options(args))
    if portkey:
        return portkey_export(ws, args.output)
    gateway = litellm_source(ws.providers)
    if gateway is None:  # pragma: no cover - the prefix forces the LiteLLM reader
        raise ConfigError("not a LiteLLM config", file=str(args.providers))
    eligibility = ws.eligibility()

    def judge(provider: str, contract: str) -> tuple[bool, str]:
        s = eligibility.standing(provider, contract)
        return s.eligible, f"{s.state}: {s.why}"

    lists = certified_lists(gateway, judge)
    text = lists.to_yaml(str(gateway.config.path))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if lists.differs:
        print(f"export: {counted(len(lists.dropped), 'fallback')} dropped: the config's lists "
              "differ from the certified lists (gate fails on them)", file=sys.stderr)
        return 1
    return 0
