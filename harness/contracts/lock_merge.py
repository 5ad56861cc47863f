"""The locks of a sharded ``certify`` (``--shard K/N``), merged into the one lock users commit.

A shard certifies whole pairings (``harness.campaign.certification``) and writes their records
to :data:`SHARD_LOCK` in its report folder with a :class:`LockShard`: its stamp (the one its
results.json carries: which shard it is, and the digests of the harness version, the settings,
the files, and the plan every shard split — the pairings with their config and contract hashes)
and the pairings it certified.
:func:`merge_locks` takes every shard's lock and folds the records into the lock file, under
the file lock ``certify`` commits under, written atomically (:meth:`LockFile.write`):

- every shard 1..N must be there exactly once, all of one plan, written by this harness;
- records merge by pairing: the newest certification of a pairing wins (a record no call
  reached never replaces one in the lock, as in ``certify``);
- two shards holding different records of one pairing at the same config and contract hashes
  is a conflict: an error naming both files, never a silent pick.

Each refusal is a :class:`ConfigError` (exit 2) that names the files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.contracts.lockfile import GENERATED_BY, LockFile, exclusive, read_lock
from harness.contracts.records import CertificationRecord
from harness.contracts.standing import has_harness_error
from harness.domain.errors import ConfigError
from harness.domain.shard import ShardStamp, digest, missing

if TYPE_CHECKING:  # an annotation: merging locks does not import the judging (and its wire)
    from harness.contracts.judgement import Pairing

#: a shard's lock, in its report folder (``certify --shard K/N``)
SHARD_LOCK = "shard.lock.json"

_FIX_RERUN = "re-run every shard with the same harness, providers file and contracts"


#: what a difference between two shards' stamps means, in the words of a refusal (a file's
#: input is named ``file <path>``, and said as it is)
_INPUT_WORDS = {
    "harness": "the harness version",
    "plan": "the providers, their configs or the contracts",
    "settings": "the settings (--adaptive, --replay, --provider, --contract, …)",
    "job": "the command",
    "shard total": "the shard count",
}


@dataclass(frozen=True, slots=True)
class LockShard:
    """What a shard's lock says about itself: its stamp (K/N, and the digests of the harness
    version, the plan and the sampling), the pairings it certified, and the lock it is for."""

    stamp: ShardStamp
    planned: int  # pairings in the whole plan (every shard's)
    pairings: tuple[tuple[str, str], ...]  # (provider, contract): the ones this shard certified
    lock: str  # the lock file the unsharded run would have updated, as it was named

    @classmethod
    def of(cls, stamp: ShardStamp, plan: Sequence[Pairing], owned: Iterable[Pairing], *,
           lock: Path) -> LockShard:
        """The lock shard stamped ``stamp`` (its inputs include :func:`plan_rows` of ``plan``,
        every shard's pairings) that certified the recorded pairings of ``owned``."""
        return cls(stamp, sum(1 for p in plan if p.record),
                   tuple((p.provider.id, p.contract.id) for p in owned if p.record), str(lock))

    @property
    def name(self) -> str:
        return str(self.stamp.shard)

    def to_json(self) -> dict[str, Any]:
        return {**self.stamp.to_json(), "planned": self.planned,
                "pairings": [list(p) for p in self.pairings], "lock": self.lock}

    @classmethod
    def from_json(cls, data: dict[str, Any], *, where: str) -> LockShard:
        stamp = ShardStamp.from_json(data, where=where)
        try:
            pairings = tuple((str(p), str(c)) for p, c in data["pairings"])
            return cls(stamp, int(data["planned"]), pairings, str(data["lock"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the shard block is malformed: {type(exc).__name__}: {exc}",
                              file=where, field="shard", fix=_FIX_RERUN) from None


def plan_rows(pairings: Iterable[Pairing]) -> str:
    """The certified pairings with their config and contract hashes and link mode, in canonical
    order, as one JSON line: two shards agree on its digest only when they split the same
    providers and contracts."""
    rows = sorted(
        (p.contract.id, p.provider.id, p.provider.config_hash(), p.contract.hash, p.failover)
        for p in pairings if p.record)
    return json.dumps(rows, separators=(",", ":"))


def write_shard_lock(path: Path, records: Iterable[CertificationRecord],
                     shard: LockShard) -> LockFile:
    """A shard's records and stamp at ``path``, atomically. A record a harness error left
    undecided is not written (our bug, not evidence), as ``certify`` never writes one."""
    lock = LockFile(path, shard=shard.to_json())
    lock.merge(r for r in records if not has_harness_error(r))
    lock.write()
    return lock


@dataclass
class LockMerge:
    """What :func:`merge_locks` did: the lock as written, and which records it took."""

    lock: LockFile
    shards: list[Path]  # in shard order
    taken: list[tuple[str, str]] = field(default_factory=list)  # pairings the lock took
    kept: list[tuple[str, str]] = field(default_factory=list)  # …where the lock's own won

    @property
    def written(self) -> bool:
        return bool(self.taken)


@dataclass(frozen=True)
class ShardLocks:
    """The locks of every shard of one run, read and checked: ready to merge into a lock."""

    shards: tuple[tuple[LockFile, LockShard], ...]  # in shard order
    records: dict[tuple[str, str], tuple[CertificationRecord, Path]]  # pairing -> newest

    @property
    def lock(self) -> Path:
        """The lock the shards name: the one an unsharded ``certify`` would have updated."""
        return Path(self.shards[0][1].lock)

    def merge_into(self, into: Path | None = None) -> LockMerge:
        """Fold the records into the lock file ``into`` (default: :attr:`lock`) as it is now,
        under its file lock, and write it atomically; nothing is written when no record is
        taken. A pairing's newest certification wins over the lock's own record; a record no
        call reached never replaces one."""
        target = into if into is not None else self.lock
        taken: list[tuple[str, str]] = []
        kept: list[tuple[str, str]] = []
        with exclusive(target):
            lock = read_lock(target)  # as it is now: a concurrent certify keeps its records
            for key in sorted(self.records):
                record = self.records[key][0]
                current = lock.records.get(key)
                if current is not None and (record.unreached
                                            or record.certified_at < current.certified_at):
                    kept.append(key)
                    continue
                lock.records[key] = record
                taken.append(key)
            if taken:
                lock.write()
        return LockMerge(lock, [lk.path for lk, _ in self.shards], taken, kept)


def read_shard_locks(shard_locks: Sequence[Path]) -> ShardLocks:
    """Read and check the shard locks ``shard_locks`` (every shard of one ``certify --shard
    K/N`` run), in any order.

    Refused, with a :class:`ConfigError` that names the files: a file that is not a shard's
    lock, one written by another harness version, shards of different runs (another providers
    file, config or contract set, other settings, another shard count), a duplicated shard, a
    missing shard, and different records of one pairing at the same config and contract hashes
    (a conflict)."""
    if not shard_locks:
        raise ConfigError("no shard lock to merge", field="locks",
                          fix=f"pass the {SHARD_LOCK} of every shard")
    shards = _check_shards([_read_shard(Path(p)) for p in shard_locks])
    return ShardLocks(tuple(shards), _by_pairing(shards))


def merge_locks(shard_locks: Sequence[Path], *, into: Path | None = None) -> LockMerge:
    """Merge the shard locks ``shard_locks`` into the lock file ``into`` (default: the lock the
    shards name): :func:`read_shard_locks`, then :meth:`ShardLocks.merge_into`."""
    return read_shard_locks(shard_locks).merge_into(into)


def _read_shard(path: Path) -> tuple[LockFile, LockShard]:
    """A shard's lock and its stamp; a file that is not one is refused by name."""
    lock = read_lock(path)
    if not lock.exists:
        raise ConfigError("no such shard lock", file=str(path),
                          fix=f"pass the {SHARD_LOCK} that 'certify --shard K/N' wrote")
    if lock.shard is None:
        raise ConfigError(
            "not a shard's lock (no 'shard' block): a committed lock is merged into, not from",
            file=str(path), field="shard",
            fix=f"pass the {SHARD_LOCK} of each shard, and this lock as the target (--lock)")
    shard = LockShard.from_json(lock.shard, where=str(path))
    if dict(shard.stamp.inputs).get("harness") != digest(__version__):
        raise ConfigError(
            f"shard {shard.name} was written by {lock.generated_by or 'another harness'!r}, "
            f"not by this {GENERATED_BY!r}", file=str(path), field="generated_by",
            fix=_FIX_RERUN)
    return lock, shard


def _check_shards(
    shards: list[tuple[LockFile, LockShard]],
) -> list[tuple[LockFile, LockShard]]:
    """Every shard 1..N once, of one run, and every planned pairing certified; in shard order.
    (A pairing two shards hold is judged record by record: :func:`_newer`.)"""
    first_lock, first = shards[0]
    for lock, shard in shards[1:]:
        differs = first.stamp.differences(shard.stamp)
        if differs or shard.planned != first.planned:
            what = ", ".join(_INPUT_WORDS.get(d, d) for d in differs) or "the plan"
            raise ConfigError(
                f"shard {shard.name} ({lock.path}) and shard {first.name} ({first_lock.path}) "
                f"are not shards of one run: they differ in {what}", file=str(lock.path),
                field="shard", fix=_FIX_RERUN)
    by_index: dict[int, Path] = {}
    for lock, shard in shards:
        index = shard.stamp.shard.index
        if index in by_index:
            raise ConfigError(
                f"shard {shard.name} is given twice: {by_index[index]} and {lock.path}",
                file=str(lock.path), field="shard.index",
                fix="pass each shard's report folder once")
        by_index[index] = lock.path
    total = first.stamp.shard.total
    absent = missing((s.stamp.shard for _, s in shards), total)
    if absent:
        names = ", ".join(f"{i}/{total}" for i in absent)
        given = ", ".join(str(p) for _, p in sorted(by_index.items()))
        raise ConfigError(
            f"shard {names} {'is' if len(absent) == 1 else 'are'} missing (given: {given})",
            field="shard.index", fix="download every shard's report folder before merging")
    ordered = sorted(shards, key=lambda s: s[1].stamp.shard.index)
    covered = {key for _, shard in ordered for key in shard.pairings}
    if len(covered) != first.planned:
        raise ConfigError(
            f"the shards certified {len(covered)} of the {first.planned} pairings planned",
            file=str(first_lock.path), field="shard.pairings", fix=_FIX_RERUN)
    return ordered


def _by_pairing(
    shards: list[tuple[LockFile, LockShard]],
) -> dict[tuple[str, str], tuple[CertificationRecord, Path]]:
    """Each pairing's newest record among the shards; a conflict is refused naming both."""
    out: dict[tuple[str, str], tuple[CertificationRecord, Path]] = {}
    for lock, _ in shards:
        for key, record in lock.records.items():
            seen = out.get(key)
            if seen is None or _newer(record, lock.path, *seen):
                out[key] = (record, lock.path)
    return out


def _newer(record: CertificationRecord, path: Path, other: CertificationRecord,
           other_path: Path) -> bool:
    """Does ``record`` (from ``path``) replace ``other``? Identical records are one; different
    records at the same config and contract hashes, or at the same time, conflict."""
    if record.to_json() == other.to_json():
        return False
    same_digests = (record.config_hash, record.contract_hash) == (other.config_hash,
                                                                  other.contract_hash)
    if same_digests or record.certified_at == other.certified_at:
        raise ConfigError(
            f"conflicting records for provider {record.provider!r} and contract "
            f"{record.contract!r} at config_hash {record.config_hash[:12]}… and contract_hash "
            f"{record.contract_hash[:12]}…: {other_path} says {other.verdict} (certified "
            f"{other.certified_at.isoformat()}), {path} says {record.verdict} (certified "
            f"{record.certified_at.isoformat()})", file=str(path), field="certifications",
            fix="keep one of them: re-run the shard that certified this pairing")
    return record.certified_at > other.certified_at
