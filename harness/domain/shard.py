"""A shard: part K of N of a run's work, and what a shard records so its parts can be merged.

A CI matrix gives N jobs, each with its own index; ``--shard K/N`` (1-based, as people write it)
makes job K take a deterministic part of the work, and ``failover-harness merge`` puts the N
report folders back together. The split depends only on positions in a canonical ordering the
engine gives (never ``hash()``, never the machine): the same K/N takes the same part on every
runner and every Python version. ``Shard.ALL`` (``1/1``) is the whole run, exactly today's.

Two splits:

- :meth:`Shard.owns` — round-robin over positions ``0, 1, 2, …`` (scenario × target × trial,
  drill × trial): position ``p`` belongs to shard ``p mod N + 1``, so every shard gets a fair
  mix even when the work is sorted by kind;
- :meth:`Shard.range` — a contiguous slice of ``0 … n-1`` (explore's schedules): shard K of N of
  seed S explores exactly the schedules a single run explores in that slice.

A shard records a :class:`ShardStamp`: its K/N and the digests of its inputs (the harness
version, the settings, the config and contract files). A merge refuses shards whose stamps
differ, naming the input that differs. This module is pure: it digests bytes and strings it is
given and reads nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import ClassVar

from harness.domain.errors import InputError

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class ShardError(InputError):
    """The shard is not valid."""

    code = "invalid_shard"


@dataclass(frozen=True)
class Shard:
    """Part ``index`` of ``total`` (1-based: ``Shard(1, 3)`` is the first of three)."""

    index: int
    total: int

    ALL: ClassVar[Shard]

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.total:
            raise ShardError(
                f"--shard: expected K/N with 1 ≤ K ≤ N, got '{self.index}/{self.total}'"
            )

    @classmethod
    def parse(cls, text: str, *, source: str = "--shard") -> Shard:
        """``"2/3"`` → ``Shard(2, 3)``; anything else is a :class:`ShardError` naming ``source``."""
        match = _SHARD.fullmatch(text)
        if match is None:
            raise ShardError(
                f"{source}: expected K/N with 1 ≤ K ≤ N (for example 2/3), got {text!r}"
            )
        index, total = int(match.group(1)), int(match.group(2))
        if not 1 <= index <= total:
            raise ShardError(f"{source}: expected K/N with 1 ≤ K ≤ N, got '{index}/{total}'")
        return cls(index, total)

    @property
    def whole(self) -> bool:
        """``1/1``: the whole run."""
        return self.total == 1

    def owns(self, position: int) -> bool:
        """Whether the item at ``position`` (0-based, in the canonical order) is this shard's:
        round-robin, position ``p`` belongs to shard ``p mod N + 1``."""
        if position < 0:
            raise ValueError(f"a position is 0 or more, got {position}")
        return position % self.total == self.index - 1

    def range(self, items: int) -> range:
        """This shard's contiguous slice of ``range(items)``: the N slices cover it exactly,
        in order, and differ in length by at most one."""
        if items < 0:
            raise ValueError(f"a count is 0 or more, got {items}")
        return range(items * (self.index - 1) // self.total, items * self.index // self.total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


Shard.ALL = Shard(1, 1)


def shard_from_env(env: Mapping[str, str]) -> Shard | None:
    """The shard a CI job's environment names unambiguously, or ``None``.

    - GitLab CI ``parallel: N``: ``CI_NODE_INDEX`` (1-based) and ``CI_NODE_TOTAL``. GitLab sets
      ``CI_NODE_TOTAL=1`` on every job that is not parallel (no index: the whole run), and
      both variables on a ``parallel: matrix:`` job too, whose matrix varies something else:
      such a job is told apart by its name (``name: [a, b]``, where a ``parallel: N`` job is
      ``name K/N``) and runs the whole run;
    - Buildkite ``parallelism: N``: ``BUILDKITE_PARALLEL_JOB`` (0-based) and
      ``BUILDKITE_PARALLEL_JOB_COUNT``.

    GitHub Actions exposes no matrix index in the environment: pass ``--shard`` from the
    matrix (``--shard ${{ matrix.shard }}/N``). A variable that is set but not a valid index is
    a :class:`ShardError` naming it (a wrong split must not pass silently as the whole run).
    """
    if "CI_NODE_INDEX" in env or env.get("CI_NODE_TOTAL", "1").strip() != "1":
        shard = _pair(env, "CI_NODE_INDEX", "CI_NODE_TOTAL", base=1)
        name = env.get("CI_JOB_NAME", "").rstrip()
        if name and not name.endswith(f" {env['CI_NODE_INDEX'].strip()}/"
                                      f"{env['CI_NODE_TOTAL'].strip()}"):
            return None  # parallel: matrix: a job of the matrix, not a shard
        return shard
    if "BUILDKITE_PARALLEL_JOB" in env or "BUILDKITE_PARALLEL_JOB_COUNT" in env:
        return _pair(env, "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", base=0)
    return None


def _pair(env: Mapping[str, str], index_name: str, total_name: str, *, base: int) -> Shard:
    names = f"{index_name}/{total_name}"
    index, total = env.get(index_name, "").strip(), env.get(total_name, "").strip()
    if not (index.isdigit() and total.isdigit()):
        raise ShardError(
            f"{names}: expected two whole numbers, got {index!r} and {total!r} "
            f"(unset both, or pass --shard K/N)"
        )
    k, n = int(index) + 1 - base, int(total)
    if not 1 <= k <= n:
        raise ShardError(
            f"{names}: {index}/{total} is not a shard of {total} "
            f"({index_name} is {base}-based; unset both, or pass --shard K/N)"
        )
    return Shard(k, n)


def digest(data: bytes | str) -> str:
    """``sha256:<hex>`` of ``data`` (a string as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class ShardStamp:
    """What a shard records: its K/N, the job it ran, and a digest per input it ran on.

    ``inputs`` are ``(name, digest)`` pairs, sorted by name: ``harness`` (the version),
    ``settings`` (the job's settings, without the shard), and one per file that decides the
    verdicts (config, contracts, lock). Shards of one run have equal ``job`` and ``inputs``.
    """

    shard: Shard
    job: str
    inputs: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, shard: Shard, job: str, inputs: Mapping[str, bytes | str]) -> ShardStamp:
        """The stamp of ``shard`` of ``job`` over ``inputs`` (name → content, digested here)."""
        return cls(shard, job, tuple(sorted((k, digest(v)) for k, v in inputs.items())))

    @property
    def run_digest(self) -> str:
        """One digest of the job and every input: equal for every shard of one run."""
        lines = [self.job, *(f"{name}={value}" for name, value in self.inputs)]
        return digest("\n".join(lines))

    def differences(self, other: ShardStamp) -> list[str]:
        """The names of what differs from ``other`` (``job``, then inputs), empty when the two
        are shards of one run."""
        named = dict(self.inputs)
        theirs = dict(other.inputs)
        out = ["job"] if self.job != other.job else []
        out += sorted(k for k in named.keys() | theirs.keys() if named.get(k) != theirs.get(k))
        if self.shard.total != other.shard.total:
            out.append("shard total")
        return out

    def to_json(self) -> dict[str, object]:
        """The stamp as results@2's optional ``shard`` field."""
        return {
            "index": self.shard.index,
            "total": self.shard.total,
            "job": self.job,
            "run_digest": self.run_digest,
            "inputs": dict(self.inputs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object], *, where: str) -> ShardStamp:
        """Read the ``shard`` field back; a malformed one is a :class:`ShardError` at ``where``."""
        try:
            index, total, job = data["index"], data["total"], data["job"]
            inputs = data["inputs"]
            if not (
                isinstance(index, int) and isinstance(total, int) and isinstance(job, str)
                and isinstance(inputs, Mapping)
                and all(isinstance(v, str) for v in inputs.values())
            ):
                raise TypeError
            return cls(Shard(index, total), job, tuple(sorted(inputs.items())))
        except (KeyError, TypeError) as exc:
            raise ShardError(
                f"{where}: 'shard' is not a shard stamp (index, total, job, inputs); "
                f"was it written by another version of failover-harness?"
            ) from exc


def settings_text(settings: object, *, leave_out: Iterable[str] = ("shard", "env")) -> str:
    """A frozen settings dataclass as one canonical line per field (the fields in
    ``leave_out`` left out: the shard itself, the environment a job reads), for a stamp's
    ``settings`` input: shards of one run have equal settings but for their K."""
    skip = set(leave_out)
    if not is_dataclass(settings):
        raise TypeError(f"settings are a dataclass, not {type(settings).__name__}")
    return "\n".join(f"{f.name}={getattr(settings, f.name)!r}" for f in fields(settings)
                     if f.name not in skip and not callable(getattr(settings, f.name)))


def missing(shards: Iterable[Shard], total: int) -> list[int]:
    """The indexes 1…``total`` not among ``shards``."""
    seen = {s.index for s in shards}
    return [k for k in range(1, total + 1) if k not in seen]
