"""``failover-harness merge DIR…``: the report folders of a run's shards in, one report out.

Each job of a CI matrix runs ``check``, ``scenarios run``, ``explore``, ``drill`` or ``certify``
with ``--shard K/N`` and uploads its report folder; one job downloads them and merges: the same
results.json (results@2), junit.xml, summary.md and index.html as one unsharded run, with its
exit code — rates summed over every shard's trials, each verdict judged again from the merged
evidence. Shards of another run (another command, harness version, setting or input file), of
another total, missing or given twice are refused with exit 2, naming them. See
docs/sharding.md. ``certify``'s shards also leave their records (``shard.lock.json``): they
merge by pairing into the lock file (``--lock``, default the one the shards ran with), the
newest certification winning; conflicting records are refused naming both.
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
    ("certify's shards: one report, and their records merged into providers.lock.json",
     "failover-harness merge shards/*"),
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
    parser.add_argument("--lock", type=Path, default=None, metavar="FILE",
                        help="certify's shards: merge their records (shard.lock.json in each "
                        "folder) into this lock file (default: the lock they were run with, "
                        "e.g. providers.lock.json)")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    # exit 2 before any report
    shards = read_shards(MergeSettings(folders=tuple(args.folders), lock=args.lock))
    return play(args, shards.command, bound(run_merge, shards))
