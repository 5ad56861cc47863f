"""`failover-harness drill --target URL --target-profile F`: drill a running service (a job
service, an agent, a gateway) from the provider side. The profile's ``drill:`` section says how
to submit and watch an intent and which providers the service calls (docs/drill.md); the
harness serves those providers on loopback, scripts them per intent, and judges the promises.

Exit 1 when a promise broke, 3 when a verdict is unknown (e.g. the service never called the
fakes), 2 for a profile, variable or port problem (nothing is written), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from pathlib import Path

from harness.commands._report import open_session
from harness.domain.errors import ConfigError
from harness.drill.engine import drilling
from harness.drill.judge import Certifier, IntentVerdict
from harness.drill.profile import DrillProfile, load_drill, profile_from
from harness.drill.summary import drill_events
from harness.gateways.drill_section import litellm_drill_section
from harness.gateways.litellm_config import read_litellm_config
from harness.gateways.source import provider_ids
from harness.gateways.sources import open_workspace


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
    if args.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1", field="--concurrency",
                          fix="--concurrency 8 (1: one intent at a time)")
    ports = parse_ports(args.port)
    names = {p.name for p in profile.section.providers}
    unknown = sorted(set(ports) - names)
    if unknown:
        raise ConfigError(f"--port names {', '.join(unknown)}, not a provider of the profile",
                          field="--port", fix=f"use one of: {', '.join(sorted(names))}")
    return ports


def litellm_profile(args: argparse.Namespace) -> DrillProfile:
    """``--target GATEWAY --config litellm.yaml --model GROUP``: the LiteLLM config fills in the
    drill profile (the gateway's deployments are the providers, on their api_base ports)."""
    config = read_litellm_config(args.config)
    section = litellm_drill_section(config, args.model, provider_ids(config),
                                    api_key_env=args.api_key_env)
    return profile_from(f"litellm {args.model}", section, str(args.config))


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


def command(args: argparse.Namespace, drill: str) -> str:
    parts = ["failover-harness", "drill", "--target", args.target]
    if args.target_profile is not None:
        parts += ["--target-profile", str(args.target_profile)]
    else:
        parts += ["--config", str(args.config), "--model", args.model]
    parts += ["--drills", drill, "--trials", str(args.trials)]
    for item in args.port:
        parts += ["--port", item]
    return shlex.join(parts)


def progress(say: Callable[[str], None]) -> Callable[[IntentVerdict], None]:
    def one(v: IntentVerdict) -> None:
        if v.verdict != "passed":
            bad = next((f for f in v.findings if f.verdict in ("broken", "unknown")), None)
            say(f"  {v.evidence.drill:<13} trial {v.evidence.trial}: {v.verdict}"
                + (f" — {bad.promise}: {bad.message}" if bad else ""))
    return one


def run_target(args: argparse.Namespace, certify: Certifier | None = None) -> int:
    profile = (load_drill(args.target_profile) if args.target_profile is not None
               else litellm_profile(args))
    ports = check_args(args, profile)
    certify = certify or certifier(args, profile)
    with drilling(profile, target=args.target, env=os.environ, ports=ports,
                  concurrency=args.concurrency) as engine:
        session = open_session(args, "drill", targets=[args.target])
        fakes = ", ".join(f"{name} ({kind}) at {url}" for name, kind, url in engine.fakes)
        session.say(f"drill: {profile.name} at {args.target}; the providers are served at "
                    f"{fakes}")
        results = engine.run(args.drills, args.trials, certify=certify,
                             on_intent=progress(session.say) if args.verbose else None)
    for event in drill_events(results, lambda name: command(args, name)):
        session.emit(event)
    session.say(f"{sum(len(v) for v in results.verdicts.values())} intents, {results.calls} "
                f"provider calls in {results.wall_s:.2f} s (concurrency {args.concurrency})")
    return session.finish()


def add_target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", metavar="URL",
                        help="the running service to drill (with --target-profile)")
    parser.add_argument("--target-profile", type=Path, metavar="FILE",
                        help="the profile with a drill: section (docs/drill.md)")
    parser.add_argument("--trials", type=int, default=1, metavar="N",
                        help="intents per drill (default: 1)")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N",
                        help="intents drilled at once (default: 8)")
    parser.add_argument("--port", action="append", default=[], metavar="NAME=PORT",
                        help="serve provider NAME on PORT (overrides the profile; repeatable)")
    parser.add_argument("--providers", type=Path, default=None, metavar="FILE",
                        help="providers.yaml naming the profile's providers, to judge the "
                        "fallback against the lock (with contract: in the profile)")
