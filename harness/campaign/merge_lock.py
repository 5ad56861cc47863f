"""``merge``'s lock part: the lock records a sharded ``certify`` wrote, merged into one lock.

Each shard of ``certify --shard K/N`` leaves ``shard.lock.json`` in its report folder
(:mod:`harness.contracts.lock_merge`). :func:`shard_locks` reads and checks them before the
merged report begins (a missing, foreign, duplicated or conflicting shard lock: exit 2, named);
:func:`merge_lock` folds them into the lock file once the report is merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.contracts.lock_merge import SHARD_LOCK, ShardLocks, read_shard_locks
from harness.domain.errors import ConfigError
from harness.domain.stream import Live
from harness.domain.words import counted


def shard_locks(folders: Sequence[Path], lock: Path | None = None) -> ShardLocks | None:
    """The shard locks of the report ``folders`` (one per shard, in K order), read and
    checked; None when no shard wrote one (a run that certified nothing: not ``certify``).
    Some shards with a lock and some without is refused, naming those without; so is a
    ``lock`` to merge into (``--lock``) when no shard wrote one."""
    paths = [folder / SHARD_LOCK for folder in folders]
    present = [p for p in paths if p.is_file()]
    if not present and lock is not None:
        raise ConfigError(f"no shard wrote lock records ({SHARD_LOCK}) to merge into {lock}",
                          field="--lock", fix="leave --lock out: only 'certify --shard K/N' "
                                              "writes lock records")
    if not present:
        return None
    if len(present) != len(paths):
        absent = ", ".join(str(p.parent) for p in paths if not p.is_file())
        raise ConfigError(
            f"no {SHARD_LOCK} in {absent}, while the other shards wrote theirs",
            field=SHARD_LOCK, fix="download every shard's whole report folder (certify "
                                  "--shard K/N writes its records there), then merge")
    return read_shard_locks(present)


def merge_lock(locks: ShardLocks, into: Path | None, live: Live) -> None:
    """Fold the shards' records into the lock file ``into`` (default: the one the shards
    name) and say what was written."""
    merged = locks.merge_into(into)
    where = merged.lock.path
    if merged.written:
        kept = f"; {counted(len(merged.kept), 'newer record')} kept" if merged.kept else ""
        live.say(f"lock file {where}: {counted(len(merged.taken), 'record')} from "
                 f"{counted(len(merged.shards), 'shard')}{kept}")
    else:
        live.say(f"lock file {where} not changed")
