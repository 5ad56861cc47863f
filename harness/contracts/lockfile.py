"""``providers.lock.json``: the certification records users commit beside ``providers.yaml``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__
from harness.contracts.records import CertificationRecord
from harness.contracts.standing import has_harness_error
from harness.domain.errors import ConfigError

LOCK_VERSION = 2  # 2: three-state verdicts with bounds, rule, k, per-input tallies, drift
READABLE_VERSIONS = (1, 2)  # a version-1 record is read, and judged stale (point-estimate rule)
GENERATED_BY = f"failover-harness {__version__}"


def lock_path_for(providers_path: Path) -> Path:
    """The lock file beside a providers file: ``providers.yaml`` → ``providers.lock.json``."""
    return providers_path.with_name(f"{providers_path.stem}.lock.json")


@dataclass
class LockFile:
    """All certification records, one per (provider, contract)."""

    path: Path
    records: dict[tuple[str, str], CertificationRecord] = field(default_factory=dict)
    exists: bool = True  # False: no file at ``path`` when it was read (an empty lock)
    # A shard's lock (``certify --shard K/N``) says which shard of which plan it holds
    # (``contracts/lock_merge.py``); the lock users commit has none.
    shard: dict[str, Any] | None = None
    generated_by: str = ""  # as read from the file ("" for a lock made in this process)

    def get(self, provider: str, contract: str) -> CertificationRecord | None:
        return self.records.get((provider, contract))

    def merge(self, records: Iterable[CertificationRecord]) -> None:
        """Replace the records for the same (provider, contract); keep the others."""
        for record in records:
            self.records[record.key] = record

    def merge_evidence(self, records: Iterable[CertificationRecord]) -> int:
        """:meth:`merge`, except that a record no call reached (``unreached``: no evidence)
        never replaces an earlier one, and one a harness error left undecided (our bug, not
        the provider's) is never written. Returns how many records were merged."""
        kept = [r for r in records if not has_harness_error(r)
                and not (r.unreached and r.key in self.records)]
        self.merge(kept)
        return len(kept)

    def to_json(self) -> dict[str, Any]:
        return {
            "lock_version": LOCK_VERSION,
            "generated_by": GENERATED_BY,
            **({"shard": self.shard} if self.shard is not None else {}),
            "certifications": [self.records[k].to_json() for k in sorted(self.records)],
        }

    def write(self) -> None:
        """Write atomically (temp file + rename), sorted, so diffs stay small and reviewable.
        The file keeps its mode (a new one gets the umask's). Call under :func:`exclusive`."""
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_of(self.path)
        fd, tmp = tempfile.mkstemp(prefix=".providers.lock.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
            self.exists = True
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def commit(self, records: Iterable[CertificationRecord]) -> int:
        """The lock as a transaction: under an exclusive lock, read the file as it is *now*
        (another ``certify`` may have written it since this one read it), merge ``records``
        by (provider, contract) as :meth:`merge_evidence` does, and write it. This object then
        holds what was written. Returns how many records were merged (0: nothing written)."""
        records = list(records)
        with exclusive(self.path):
            current = read_lock(self.path)
            merged = current.merge_evidence(records)
            if merged:
                current.write()
        self.records = current.records
        return merged


def _mode_of(path: Path) -> int:
    """The permission bits ``path`` has, or those a new file gets under the current umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` for read-merge-write of the lock file ``path``.

    The lock is taken on the folder that holds the file, not on the file itself: the file is
    replaced by a rename on every write (a lock on the old inode would guard nothing), and a
    lock on the folder leaves no extra file in the user's repository. The kernel drops it when
    the process dies, so a SIGKILL never leaves it held."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def read_lock(path: Path) -> LockFile:
    """Read ``path``; a missing file is an empty lock, a broken one a :class:`ConfigError`."""
    fix = "restore it from version control, or delete it and run 'failover-harness certify'"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LockFile(path, exists=False)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the lock file: {exc}", file=str(path), fix=fix) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno, fix=fix
        ) from None
    except RecursionError:  # [[[[… 100,000 deep: no lock file nests like that
        raise ConfigError("not a failover-harness lock file: nested too deeply to read",
                          file=str(path), fix=fix) from None
    if not isinstance(data, dict) or not isinstance(data.get("certifications"), list):
        raise ConfigError(
            "not a failover-harness lock file (no 'certifications' list)", file=str(path), fix=fix
        )
    if data.get("lock_version") not in READABLE_VERSIONS:
        raise ConfigError(
            f"lock_version {data.get('lock_version')!r} is not supported (this harness writes "
            f"{LOCK_VERSION})", file=str(path), field="lock_version",
            fix="re-run 'failover-harness certify' with this version of the harness",
        )
    shard = data.get("shard")
    lock = LockFile(path, shard=shard if isinstance(shard, dict) else None,
                    generated_by=str(data.get("generated_by") or ""))
    for i, item in enumerate(data["certifications"]):
        try:
            record = CertificationRecord.from_json(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"certification #{i + 1} is malformed: {type(exc).__name__}: {exc}",
                file=str(path), field=f"certifications[{i}]", fix=fix,
            ) from None
        lock.records[record.key] = record
    return lock
