"""The command-line options every command that reads a providers source shares for gateways."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.gateways.options import ProvidersSource
from harness.gateways.source import parse_contract_map, parse_headers


def add_gateway_options(parser: argparse.ArgumentParser, *, via: bool = True) -> None:
    """``--contract-map GROUP=ID`` (repeatable), ``--via URL`` and ``--header NAME:VALUE``, for
    a gateway's config (``via=False`` for a command that never calls a provider: ``gate``)."""
    group = parser.add_argument_group(
        "gateways (--providers litellm:config.yaml, portkey:config.json)")
    group.add_argument("--contract-map", action="append", default=[], metavar="GROUP=ID",
                       help="the contract a model group (LiteLLM) or a config (Portkey: the "
                            "file's name) serves (repeatable; or `contracts:` in "
                            "failover-harness.yaml beside the config)")
    if not via:
        return
    group.add_argument("--via", default=None, metavar="URL",
                       help="certify through the running gateway at URL (client → gateway → "
                            "provider), addressing each deployment or target alone")
    group.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                       help="send this header with every request through the gateway "
                            "(repeatable; replaces a header of the same name)")


def gateway_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`harness.gateways.sources.open_workspace`."""

    return {
        "contract_map": parse_contract_map(getattr(args, "contract_map", None) or []) or None,
        "via": getattr(args, "via", None),
        "headers": parse_headers(getattr(args, "header", None) or []) or None,
    }


def providers_source(args: argparse.Namespace, providers: Path | None = None) -> ProvidersSource:
    """``--providers`` (or ``providers``), ``--contracts``, ``--lock`` and the gateway options."""
    return ProvidersSource(providers=providers if providers is not None else args.providers,
                           contracts=args.contracts, lock=args.lock, **gateway_options(args))
