"""``failover-harness merge DIR…``: the report folders of a run's shards in, one report out.

Each job of a CI matrix runs ``check``, ``scenarios run``, ``explore`` or ``drill`` with
``--shard K/N`` and uploads its report folder; one job downloads them and merges: the same
results.json (results@2), junit.xml, summary.md and index.html as one unsharded run, with its
exit code — rates summed over every shard's trials, each verdict judged again from the merged
evidence. Shards of another run (another command, harness version, setting or input file), of
another total, missing or given twice are refused with exit 2, naming them. See
docs/sharding.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.campaign.merge import MergeSettings, read_shards, run_merge
from harness.commands._report import add_report_options, bound, play

HELP = "Merge the report folders of a run's shards (--shard K/N) into one run's report"
EXAMPLES = (
    ("merge three shards of check, downloaded as CI artifacts",
     "failover-harness merge shards/1/latest shards/2/latest shards/3/latest "
     "--junit junit.xml"),
    ("every shard's report directory (their latest report each)",
     "failover-harness merge reports-shard-*"),
)
EXITS = {
    0: "every promise holds, over every shard",
    1: "a promise is broken, or an auto failover link is ineligible",
    3: "nothing broken, but some verdict is unknown",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR",
                        help="the shards' report folders (or report directories: their "
                        "latest), one per shard")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    shards = read_shards(MergeSettings(folders=tuple(args.folders)))  # exit 2 before any report
    return play(args, shards.command, bound(run_merge, shards))
