"""`failover-harness export litellm-fallbacks | portkey-targets | github-workflow | gitlab-ci`:
a gateway config's fallbacks, certified ones only; or a CI recipe that splits a run over a
matrix of shards and merges them.

``github-workflow`` / ``gitlab-ci`` print the CI file of docs/ci.md for ``--shards N`` jobs
running ``--run`` (default ``certify --adaptive``): each shard uploads its report folder, one job
downloads them, runs ``failover-harness merge``, gates and publishes the JUnit and the HTML.

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
from harness.commands._workflows import DEFAULT_RUN, github_workflow, gitlab_ci
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.gateways.export import certified_lists, litellm_source, portkey_export
from harness.gateways.sources import open_workspace

WORKFLOWS = {"github-workflow": github_workflow, "gitlab-ci": gitlab_ci}
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
    ("a GitHub Actions workflow certifying over 4 shards, merged and gated",
     "failover-harness export github-workflow --shards 4 "
     "--output .github/workflows/failover-sharded.yml"),
    ("the same for GitLab CI, running check",
     "failover-harness export gitlab-ci --shards 4 --run check"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=["litellm-fallbacks", "portkey-targets",
                                         *WORKFLOWS],
                        help="litellm-fallbacks: the fallback lists of a LiteLLM config; "
                             "portkey-targets: a Portkey config's certified targets; "
                             "github-workflow / gitlab-ci: a CI recipe over --shards jobs")
    parser.add_argument("--providers", type=Path, default=None, metavar="FILE",
                        help="the gateway's config (default: config.yaml, or config.json for "
                             "portkey-targets)")
    parser.add_argument("--contracts", type=Path, default=None, metavar="DIR",
                        help="the contracts folder (default: contracts/ beside the config)")
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="the lock file (default: <config>.lock.json beside it)")
    parser.add_argument("--output", type=Path, default=None, metavar="FILE",
                        help="write the YAML there instead of stdout")
    recipe = parser.add_argument_group("github-workflow, gitlab-ci")
    recipe.add_argument("--shards", type=int, default=4, metavar="N",
                        help="jobs in the matrix (default: 4)")
    recipe.add_argument("--run", default=DEFAULT_RUN, metavar="COMMAND",
                        help=f"what each shard runs (default: {DEFAULT_RUN!r}; or 'check', "
                             "'scenarios run scenarios/', 'explore …', 'drill …')")
    add_gateway_options(parser, via=False)  # --contract-map; export never calls a provider


def run(args: argparse.Namespace) -> int:
    if args.what in WORKFLOWS:
        _write(WORKFLOWS[args.what](args.shards, args.run), args.output)
        return 0
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
    _write(lists.to_yaml(str(gateway.config.path)), args.output)
    if lists.differs:
        print(f"export: {counted(len(lists.dropped), 'fallback')} dropped: the config's lists "
              "differ from the certified lists (gate fails on them)", file=sys.stderr)
        return 1
    return 0


def _write(text: str, output: Path | None) -> None:
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
