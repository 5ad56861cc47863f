"""`failover-harness drill`: a service's or a gateway's failover under timeouts and overload.

``drill --target URL --target-profile F``: any service, from the provider side (see
:mod:`harness.commands.drill_target` and docs/drill.md). A gateway's own config fills in the
profile instead: ``--config litellm.yaml --model GROUP`` (LiteLLM) or ``--config
portkey:config.json`` (Portkey; detected by shape too). ``--gateway URL`` is another spelling
of ``--target URL`` for a gateway. Start the gateway on a test copy of its config (each
upstream on a free loopback port, the primary's timeout short), then::

    failover-harness drill --gateway http://127.0.0.1:4000 --config litellm.test.yaml --model triage

One engine for all: the drill answers in place of the providers on those ports and reports,
per drill, each promise's rate over the intents, and per failing intent the provider calls,
billed completions, late answers, who answered (the gateway's answer header, else the signed
answer), whether that fallback is certified, idempotency keys on retries and the client's wait.
Exit codes in ``EXITS``. Like every judging command it writes the report folder (one
``drill_run`` event per drill), plus ``drill.json`` in it: every intent's counts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._report import add_report_options
from harness.commands.drill_target import add_target_options, run_target
from harness.domain.errors import ConfigError
from harness.drill.drills import NAMES, parse_names

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
    ("drill a Portkey gateway running the config route.json",
     "failover-harness drill --gateway http://127.0.0.1:8787/v1 --config portkey:route.json"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    parser.add_argument("--gateway", metavar="URL",
                        help="a running gateway (e.g. http://127.0.0.1:4000): --target URL, "
                        "with its config in --config")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the config the gateway runs (a test copy: loopback upstreams): "
                        "LiteLLM's YAML (with --model), or portkey:config.json")
    parser.add_argument("--model", metavar="GROUP",
                        help="the LiteLLM model group to send requests to")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                        help="send this header with every request to the target (repeatable; "
                        "${VAR} in the value is read from the environment; values are never "
                        "shown)")
    parser.add_argument("--drills", default="all", metavar="LIST",
                        help=f"comma-separated: {', '.join(NAMES)} or all (default: all; "
                        "double_click is double-click)")
    parser.add_argument("--requests", type=int, dest="trials", default=argparse.SUPPRESS,
                        metavar="N", help="the same as --trials (the old gateway drill's name)")
    parser.add_argument("--api-key-env", default="LITELLM_MASTER_KEY", metavar="NAME",
                        help="variable holding the gateway's key (default: LITELLM_MASTER_KEY)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="contracts folder (default: contracts/ beside --providers, or "
                        "beside the gateway's --config; else in the current folder)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="lock file with the certifications (default: <name>.lock.json "
                        "beside --providers, or beside the gateway's --config)")
    parser.add_argument("--contract-map", action="append", default=[], metavar="GROUP=ID",
                        help="the contract a model group serves (or contracts: in "
                             "failover-harness.yaml)")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    target = _target(args)
    try:
        drills = tuple(parse_names(args.drills))
    except ValueError as exc:
        raise ConfigError(str(exc), field="--drills",
                          fix="--drills hang,late (or leave it out: every drill)") from None
    return run_target(args, target, drills)


def _target(args: argparse.Namespace) -> str:
    """The service to drill: ``--target URL``, or ``--gateway URL`` (another spelling)."""
    target: str | None = args.target
    if args.gateway is not None:
        if target is not None and target != args.gateway:
            raise ConfigError("--gateway and --target name two different services",
                              field="--gateway", fix="give one of them (--target URL)")
        if args.config is None:
            raise ConfigError("--gateway needs --config (the gateway's config)", field="--config",
                              fix="--config litellm.test.yaml --model GROUP, or --config "
                                  "portkey:config.json")
        target = args.gateway
    if target is None:
        raise ConfigError("drill needs --target URL --target-profile FILE (a service), or "
                          "--gateway URL --config FILE [--model GROUP] (a gateway)",
                          field="--target", fix="failover-harness drill --target "
                          "http://127.0.0.1:8000 --target-profile service.profile.yaml")
    if args.target_profile is None and args.config is None:
        raise ConfigError("--target needs --target-profile (or, for a gateway, --config)",
                          field="--target-profile",
                          fix="--target-profile service.profile.yaml (see docs/drill.md)")
    return target
