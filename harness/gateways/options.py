"""The command-line options every command that reads a providers source shares for gateways."""

from __future__ import annotations

import argparse
from typing import Any


def add_gateway_options(parser: argparse.ArgumentParser, *, via: bool = True) -> None:
    """``--contract-map GROUP=ID`` (repeatable) and ``--via URL``, for a LiteLLM config
    (``via=False`` for a command that never calls a provider: ``gate``)."""
    group = parser.add_argument_group("LiteLLM config (--providers litellm:config.yaml)")
    group.add_argument("--contract-map", action="append", default=[], metavar="GROUP=ID",
                       help="the contract a model group serves (repeatable; or `contracts:` in "
                            "failover-harness.yaml beside the config)")
    if not via:
        return
    group.add_argument("--via", default=None, metavar="URL",
                       help="certify through the running gateway at URL (client → gateway → "
                            "provider), addressing each deployment by its model group")


def gateway_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`harness.contracts.workspace.open_workspace`."""
    from harness.gateways.source import parse_contract_map

    return {
        "contract_map": parse_contract_map(getattr(args, "contract_map", None) or []) or None,
        "via": getattr(args, "via", None),
    }
