"""``--shard K/N``, the option of every command whose work splits over a CI matrix (``check``,
``scenarios run``, ``explore``, ``drill``), and its default from the CI system's environment.

The flag wins; without it, a CI job that says its index unambiguously (GitLab's ``parallel:``
``CI_NODE_INDEX``/``CI_NODE_TOTAL``, Buildkite's ``BUILDKITE_PARALLEL_JOB``/
``BUILDKITE_PARALLEL_JOB_COUNT``) runs its shard; GitHub Actions has no such variable: pass
``--shard ${{ matrix.shard }}/N``. See docs/sharding.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from harness.domain.shard import Shard, shard_from_env


def add_shard_option(parser: argparse.ArgumentParser, work: str) -> None:
    parser.add_argument(
        "--shard", default=None, metavar="K/N",
        help=f"run shard K of N: a deterministic part of {work}; `failover-harness merge` "
        "puts the N report folders together (default: from CI_NODE_INDEX/CI_NODE_TOTAL or "
        "BUILDKITE_PARALLEL_JOB/_COUNT when set; else the whole run)")


def shard_of(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Shard | None:
    """The shard ``--shard`` names, else the CI environment's, else None (the whole run)."""
    given = getattr(args, "shard", None)
    if given is not None:
        return Shard.parse(given)
    return shard_from_env(os.environ if env is None else env)
