"""`failover-harness drill --target URL --target-profile F`: drill a running service (a job
service, an agent, a gateway) from the provider side. The profile's ``drill:`` section says how
to submit and watch an intent and which providers the service calls (docs/drill.md); the
harness serves those providers on loopback, scripts them per intent, and judges the promises.

Exit 1 when a promise broke, 3 when a verdict is unknown (e.g. the service never called the
fakes), 2 for a profile, variable or port problem (nothing is written), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path

from harness.commands._gateway import gateway_options
from harness.commands._report import bound, play
from harness.commands._shard import add_shard_option, shard_of
from harness.domain.errors import ConfigError
from harness.drill.again import REDRILLS
from harness.drill.entry import DrillSettings, run_drill
from harness.drill.judge import Certifier
from harness.gateways.drill_section import litellm_drill_section, portkey_drill_section
from harness.gateways.litellm_config import read_litellm_config
from harness.gateways.portkey_config import PORTKEY_PREFIX, looks_like_portkey
from harness.gateways.portkey_source import PortkeySource, load_portkey_providers
from harness.gateways.source import (
    PROJECT_FILE,
    load_litellm_providers,
    no_contract_map,
    parse_headers,
    project_settings,
    provider_ids,
)
from harness.gateways.sources import open_workspace
from harness.target.drill_profile import DrillProfile, load_drill, profile_from

TRIALS = 10  # intents per drill by default: enough for a rate ("broken in 3 of 10 intents")
CONCURRENCY = 36  # intents at work at once by default (a settling one gives its place back)
NO_CONTRACT = "(none)"  # a Portkey config mapped to no contract: its fallbacks are not judged
ENV_ONLY = re.compile(r"(\$\{[A-Za-z_][A-Za-z0-9_]*\}\s*)+")


def parse_ports(items: list[str]) -> dict[str, int]:
    """``--port NAME=PORT`` (repeatable) as a mapping; ConfigError with the fix."""
    out: dict[str, int] = {}
    for item in items:
        name, _, port = item.partition("=")
        if not name or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ConfigError(f"--port {item!r} is not NAME=PORT", field="--port",
                              fix="write --port gpt=4101 (a provider's name in the profile)")
        out[name] = int(port)
    return out


def check_args(args: argparse.Namespace, profile: DrillProfile) -> dict[str, int]:
    if args.trials < 1:
        raise ConfigError("--trials must be at least 1", field="--trials", fix="--trials 20")
    if args.drill_again < 0:
        raise ConfigError("--drill-again must be 0 or more", field="--drill-again",
                          fix=f"--drill-again {REDRILLS} (0: never drill an intent again)")
    if args.concurrency is not None and args.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1", field="--concurrency",
                          fix="--concurrency 8 (1: one intent at a time)")
    ports = parse_ports(args.port)
    names = {p.name for p in profile.section.providers}
    unknown = sorted(set(ports) - names)
    if unknown:
        raise ConfigError(f"--port names {', '.join(unknown)}, not a provider of the profile",
                          field="--port", fix=f"use one of: {', '.join(sorted(names))}")
    return ports


def gateway_profile(args: argparse.Namespace) -> tuple[DrillProfile, Certifier | None]:
    """``--target GATEWAY --config FILE``: the gateway's config fills in the drill profile (its
    upstreams are the providers, on their loopback ports), and the lock judges its fallbacks
    when the config serves a contract. LiteLLM: ``--model GROUP`` names the group; Portkey
    (``portkey:config.json``, or by shape): the config travels in ``x-portkey-config``."""
    contract_map = gateway_options(args)["contract_map"]
    if is_portkey(args.config):
        path = Path(str(args.config).removeprefix(PORTKEY_PREFIX))
        source = portkey_source(path, contract_map)
        profile = profile_from(f"portkey {path.name}", portkey_drill_section(source), str(path))
        return profile, _certifier(Path(f"{PORTKEY_PREFIX}{path}"), args, source.contract)
    config = read_litellm_config(args.config)  # a missing or unreadable file: its own error
    if args.model is None:
        raise ConfigError(f"{args.config} is a LiteLLM config: say which model group to drill",
                          field="--model", fix=f"--model GROUP (one of: "
                          f"{', '.join(sorted(config.groups()))})")
    section = litellm_drill_section(config, args.model, provider_ids(config),
                                    api_key_env=args.api_key_env)
    profile = profile_from(f"litellm {args.model}", section, str(args.config))
    if no_contract_map(args.config, contract_map):
        return profile, None
    gateway = load_litellm_providers(args.config, contract_map=contract_map).gateway
    contract = gateway.contract_map.get(args.model) if gateway else None
    return profile, _certifier(Path(f"litellm:{args.config}"), args, contract)


def is_portkey(config: Path) -> bool:
    """``portkey:config.json``, or a JSON file shaped like a Portkey config."""
    if str(config).startswith(PORTKEY_PREFIX):
        return True
    if config.suffix.lower() != ".json" or not config.is_file():
        return False
    try:
        return looks_like_portkey(json.loads(config.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False


def portkey_source(path: Path, contract_map: dict[str, str] | None) -> PortkeySource:
    """The Portkey config's targets, with its contract when one is mapped (else none: the
    fallback that answers is then not judged against the lock)."""
    project = project_settings(path.parent / PROJECT_FILE)
    if path.stem not in (contract_map or project.get("contracts") or {}):
        contract_map = {path.stem: NO_CONTRACT}
    source = load_portkey_providers(path, contract_map=contract_map).portkey
    assert source is not None
    return source


def _certifier(source: Path, args: argparse.Namespace, contract: str | None
               ) -> Certifier | None:
    if contract is None or contract == NO_CONTRACT:
        return None
    eligibility = open_workspace(source, args.contracts, args.lock,
                                 contract_map=gateway_options(args)["contract_map"]
                                 ).eligibility()

    def judge(provider: str) -> tuple[bool, str]:
        s = eligibility.standing(provider, contract)
        return s.eligible, f"{s.state}: {s.why}"

    return judge


def certifier(args: argparse.Namespace, profile: DrillProfile) -> Certifier | None:
    """Whether a fallback is certified for the profile's contract, from the lock (None: the
    profile names no contract or no providers file was given)."""
    contract = profile.section.contract
    if contract is None or args.providers is None:
        return None
    eligibility = open_workspace(args.providers, args.contracts, args.lock).eligibility()

    def judge(provider: str) -> tuple[bool, str]:
        s = eligibility.standing(provider, contract)
        return s.eligible, f"{s.state}: {s.why}"

    return judge


def command(args: argparse.Namespace, drill: str, target: str | None = None) -> str:
    """The command that drills ``drill`` again (header values shown only as their ${VAR})."""
    parts = ["failover-harness", "drill", "--target", target or args.target]
    if args.target_profile is not None:
        parts += ["--target-profile", str(args.target_profile)]
    else:
        parts += ["--config", str(args.config)] + (["--model", args.model] if args.model
                                                   else [])
    parts += ["--drills", drill, "--trials", str(args.trials)]
    for item in args.port:
        parts += ["--port", item]
    for item in getattr(args, "header", None) or []:
        name, _, value = item.partition(":")
        shown = value.strip() if ENV_ONLY.fullmatch(value.strip()) else "<redacted>"
        parts += ["--header", f"{name.strip()}: {shown}"]
    for item in getattr(args, "contract_map", None) or []:
        parts += ["--contract-map", item]
    for flag, value in (("--providers", args.providers), ("--contracts", args.contracts),
                        ("--lock", args.lock)):
        if value is not None:
            parts += [flag, str(value)]
    return shlex.join(parts)


def run_target(args: argparse.Namespace, target: str, drills: tuple[str, ...]) -> int:
    """Build the settings and play :func:`harness.drill.entry.run_drill`'s stream."""
    certify: Certifier | None = None
    if args.target_profile is not None:
        profile = load_drill(args.target_profile)
    else:
        profile, certify = gateway_profile(args)
    headers = parse_headers(getattr(args, "header", None) or [])
    profile = replace(profile, extra_headers=headers or None)
    ports = check_args(args, profile)
    settings = DrillSettings(
        profile=profile, target=target, env=os.environ, drills=drills, trials=args.trials,
        concurrency=args.concurrency, ports=ports, certify=certify or certifier(args, profile),
        command=lambda name: command(args, name, target), shard=shard_of(args),
        progress=bool(args.verbose), redrills=args.drill_again)
    return play(args, "drill", bound(run_drill, settings), bars=False)


def add_target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", metavar="URL",
                        help="the running service to drill (with --target-profile)")
    parser.add_argument("--target-profile", type=Path, metavar="FILE",
                        help="the profile with a drill: section (docs/drill.md)")
    parser.add_argument("--trials", type=int, default=TRIALS, metavar="N",
                        help=f"intents per drill (default: {TRIALS}, so that each promise "
                        "gets a rate)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, metavar="N",
                        help=f"intents at work at once, every drill's mixed in one round "
                        f"(default: {CONCURRENCY}; a settling intent does not count)")
    parser.add_argument("--drill-again", type=int, default=REDRILLS, metavar="N",
                        help="drill a trial again as a fresh intent, at most N times, when "
                        "the load left its intent without evidence (broken promises are never "
                        f"replaced; default: {REDRILLS}; 0: never)")
    add_shard_option(parser, "the (drill, trial) intents")
    parser.add_argument("--port", action="append", default=[], metavar="NAME=PORT",
                        help="serve provider NAME on PORT (overrides the profile; repeatable)")
    parser.add_argument("--providers", type=Path, default=None, metavar="FILE",
                        help="providers.yaml naming the profile's providers, to judge the "
                        "fallback against the lock (with contract: in the profile)")
