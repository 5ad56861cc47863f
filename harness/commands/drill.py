"""`failover-harness drill`: a service's or a gateway's failover under timeouts and overload.

``drill --target URL --target-profile F``: any service, from the provider side (see
:mod:`harness.commands.drill_target` and docs/drill.md). ``drill --gateway``: a LiteLLM gateway
from its config. Start the gateway on a test copy of its LiteLLM config (each deployment's
``api_base`` on a free loopback port, the primary's ``timeout`` short), then::

    failover-harness drill --gateway http://127.0.0.1:4000 --config litellm.test.yaml --model triage

The drill answers in place of the providers on those ports and reports, per drill and request,
the provider calls, billed completions, late answers, the fallback reached and whether it is
certified, idempotency keys on retries and the client's wait. Exit 1 when one request caused two
billed completions or reached an uncertified fallback; 3 when a drill's scripted failure never
happened or a fallback could not be judged; 2 for bad input; 0 otherwise. Like every judging
command it writes the report folder (one case per drill), plus ``drill.json`` in it: every
request's counts.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Literal

from harness.commands._report import add_report_options
from harness.commands.drill_target import add_target_options, run_target
from harness.domain.errors import ConfigError
from harness.drill.drills import NAMES, parse_names
from harness.gateways.options import gateway_options

HELP = ("Drill a running service's or gateway's failover from the provider side: hangs, late "
        "answers, 5xx, 429/529, resets, cut streams and double clicks")
EXITS = {
    0: "every drill ran and every promise held",
    1: "a promise was broken (two jobs for one intent, a timeout reported as a failure, a "
       "result that changed, billed calls over the bound, a cut stream taken as a success, an "
       "uncertified fallback reached)",
    2: "bad input: a profile or config error, a busy or non-loopback port",
    3: "a promise could not be judged (the scripted failure never happened, the service never "
       "called the fakes, a fallback could not be judged)",
}
EXAMPLES = (
    ("drill a jobs service whose providers point at the fakes' ports",
     "failover-harness drill --target http://127.0.0.1:8000 --target-profile drill.profile.yaml"),
    ("drill the model group 'triage' of a LiteLLM proxy running config.yaml",
     "failover-harness drill --gateway http://127.0.0.1:4000 --config config.yaml "
     "--model triage"),
)
OUTCOME: dict[str, Literal["pass", "fail", "unknown"]] = {
    "passed": "pass", "failed": "fail", "unknown": "unknown"}
GATEWAY_DRILLS = ("hang", "late", "overload-429", "overload-529", "reset", "stream-cut")


def _drills(text: str) -> list[str]:
    try:
        return parse_names(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    parser.add_argument("--gateway", metavar="URL",
                        help="a running LiteLLM gateway (e.g. http://127.0.0.1:4000), with "
                        "--config and --model")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the LiteLLM config the gateway runs (a test copy: loopback api_base)")
    parser.add_argument("--model", metavar="GROUP",
                        help="the model group to send requests to")
    parser.add_argument("--drills", type=_drills, default=None, metavar="LIST",
                        help=f"comma-separated: {', '.join(NAMES)} or all (default: all; with "
                        f"--gateway: {', '.join(GATEWAY_DRILLS)})")
    parser.add_argument("--requests", type=int, default=1, metavar="N",
                        help="requests per drill (default: 1)")
    parser.add_argument("--api-key-env", default="LITELLM_MASTER_KEY", metavar="NAME",
                        help="variable holding the gateway's key (default: LITELLM_MASTER_KEY)")
    parser.add_argument("--client-timeout", type=float, default=120.0, metavar="S",
                        help="how long the client waits for the gateway (default: 120)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="contracts folder (default: contracts/ beside the config)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="lock file with the certifications (default: beside the config)")
    parser.add_argument("--contract-map", action="append", default=[], metavar="GROUP=ID",
                        help="the contract a model group serves (or contracts: in "
                             "failover-harness.yaml)")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    if (args.target is None) == (args.gateway is None):
        raise ConfigError("drill needs either --target URL --target-profile FILE (a service) or "
                          "--gateway URL --config FILE --model GROUP (a LiteLLM gateway)",
                          field="--target", fix="failover-harness drill --target "
                          "http://127.0.0.1:8000 --target-profile service.profile.yaml")
    if args.target is not None:
        if args.target_profile is None and (args.config is None or args.model is None):
            raise ConfigError("--target needs --target-profile (or, for a LiteLLM gateway, "
                              "--config and --model)", field="--target-profile",
                              fix="--target-profile service.profile.yaml (see docs/drill.md)")
        args.drills = args.drills or list(NAMES)
        if args.target_profile is None:  # a LiteLLM gateway: the lock judges its fallbacks
            return run_target(args, _judge(args, gateway_options(args))[0])
        return run_target(args)
    return _run_gateway(args)


def _run_gateway(args: argparse.Namespace) -> int:
    from harness.commands._report import open_session
    from harness.gateways.drill import run_drills
    from harness.gateways.litellm_config import read_litellm_config
    from harness.gateways.source import provider_ids
    from harness.providers.secrets import secret_from_env
    from harness.reports import Case

    if args.config is None or args.model is None:
        raise ConfigError("--gateway needs --config and --model", field="--config",
                          fix="--config litellm.test.yaml --model GROUP")
    args.drills = args.drills or list(GATEWAY_DRILLS)
    unsupported = [d for d in args.drills if d not in GATEWAY_DRILLS]
    if unsupported:
        raise ConfigError(f"drill(s) {', '.join(unsupported)} need a service profile",
                          field="--drills", fix=f"with --gateway use: {', '.join(GATEWAY_DRILLS)}"
                          " (or drill the gateway with --target and a chat profile)")
    if args.requests < 1:
        raise ConfigError("--requests must be at least 1", field="--requests", fix="--requests 1")
    config = read_litellm_config(args.config)
    if args.model not in config.groups():
        raise ConfigError(f"model group {args.model!r} is not in {args.config}", field="--model",
                          fix=f"use one of: {', '.join(sorted(config.groups()))}")
    options = gateway_options(args)
    judge, contract = _judge(args, options)
    key = secret_from_env(os.environ, args.api_key_env)
    session = open_session(args, "drill", targets=[args.gateway])
    session.say(f"drill: {args.model} through {args.gateway} ({args.config})")
    report = run_drills(
        gateway=args.gateway, config=config, group=args.model,
        provider_ids=provider_ids(config), drills=args.drills, api_key=key, judge=judge,
        contract=contract, requests=args.requests, client_timeout_s=args.client_timeout,
        on_request=lambda drill, result: session.say(f"  {drill:<13} {_line(result)}"),
    )
    details = session.folder / "drill.json"
    details.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    for d in report.drills:
        problems = [p for r in d.requests for p in r.violations()]
        unknowns = ([d.reason] if d.reason else []) + [u for r in d.requests for u in r.unknowns()]
        session.emit(Case(
            suite=f"drill {args.model} via {args.gateway}",
            name=d.drill.name,
            outcome=OUTCOME[d.verdict],
            message=(problems or unknowns or [f"{d.drill.description}: the client got a whole "
                                              "answer, no double billing, no uncertified "
                                              "fallback"])[0],
            details=(f"primary: {d.primary_behaviour} — {d.drill.description}",
                     *(_line(r) for r in d.requests), *problems[1:], *unknowns[1:]),
            command=_command(args, d.drill.name),
            wall_s=sum(r.waited_s for r in d.requests),
        ))
    session.say(f"gateway timeout {report.gateway_timeout_s:g} s; every request's counts in "
                f"{details}")
    return session.finish()


def _command(args: argparse.Namespace, drill: str) -> str:
    import shlex

    parts = ["failover-harness", "drill", "--gateway", args.gateway, "--config",
             str(args.config), "--model", args.model, "--drills", drill]
    for item in args.contract_map:
        parts += ["--contract-map", item]
    if args.lock:
        parts += ["--lock", str(args.lock)]
    return shlex.join(parts)


def _judge(args: argparse.Namespace, options: dict[str, Any]) -> tuple[Any, str | None]:
    """Whether a fallback is certified for the group's contract, from the lock file; a judge
    that answers None (unknown) when the group serves no contract."""
    from harness.gateways.source import load_litellm_providers, no_contract_map
    from harness.gateways.sources import open_workspace

    if no_contract_map(args.config, options["contract_map"]):
        return (lambda provider: None), None
    gateway = load_litellm_providers(args.config, contract_map=options["contract_map"]).gateway
    contract = gateway.contract_map.get(args.model) if gateway else None
    if contract is None:
        return (lambda provider: None), None
    ws = open_workspace(Path(f"litellm:{args.config}"), args.contracts, args.lock,
                        contract_map=options["contract_map"])
    eligibility = ws.eligibility()

    def judge(provider: str) -> tuple[bool, str]:
        s = eligibility.standing(provider, contract)
        return s.eligible, f"{s.state}: {s.why}"

    return judge, contract


def _line(r: Any) -> str:
    calls = ", ".join(f"{pid}×{n}" for pid, n in r.calls.items()) or "none"
    client = f"HTTP {r.status}" if r.status is not None else (r.error or "no answer")
    extra = []
    if r.late_primary:
        extra.append(f"late primary answer: {r.late_primary}")
    if r.retries:
        extra.append(f"{r.retries_with_key} of {r.retries} retries with an idempotency key")
    if r.fallback:
        state = {True: "certified", False: "NOT certified", None: "unknown"}[r.fallback_certified]
        extra.append(f"fallback {r.fallback} ({state})")
    if r.stream_complete is not None:
        extra.append("stream complete" if r.stream_complete else "stream broken")
    return (f"{client} after {r.waited_s:.2f} s; provider calls {r.provider_calls} ({calls}); "
            f"billed {r.billed}" + ("; " + "; ".join(extra) if extra else ""))
