"""A shard's part of a run of scenarios (``--shard K/N``): positions, the stamp, the order.

The work of ``scenarios run`` and ``check`` is a sequence of positions in a canonical order:
each scenario in the order the suites load, a single run taking one position and a trial series
``patterns × trials`` (pattern-major: pattern *p*, trial *i* is ``p × trials + i``). Shard K of
N runs the positions it owns (:meth:`~harness.domain.shard.Shard.owns`: round-robin), so a
series' trials spread over every shard. The shard's stamp digests what decides its verdicts —
the harness version, the settings but for the shard, and every file it read — so ``merge``
refuses shards of different runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from harness import __version__
from harness.domain.errors import ConfigError
from harness.domain.shard import Shard, ShardStamp, settings_text
from harness.domain.stream import Sharded
from harness.scenarios.model import Scenario, trial_count, trial_patterns


def series_positions(scenario: Scenario, *, trials: bool, count: int | None = None,
                     arrival: tuple[str, ...] | None = None) -> int:
    """How many positions one scenario takes: 1 for a single run, patterns × trials for a
    trial series."""
    if not trials:
        return 1
    return len(trial_patterns(scenario, arrival)) * trial_count(scenario, count)


def unit(kind: str, name: str) -> str:
    """A unit's name in a shard's ``order`` (``scenario:<name>``, ``drill:<name>``)."""
    return f"{kind}:{name}"


def read_inputs(files: Iterable[str | Path]) -> dict[str, bytes]:
    """``file <path>`` → the file's bytes, for every file that exists (sorted, deduplicated)."""
    out: dict[str, bytes] = {}
    for name in sorted({str(f) for f in files}):
        path = Path(name)
        if path.is_file():
            out[f"file {name}"] = path.read_bytes()
    return out


def sharded(job: str, shard: Shard, settings: object, files: Iterable[str | Path], *,
            order: Iterable[str] = (), extra: Mapping[str, bytes | str] | None = None
            ) -> Sharded:
    """The message that makes a run's report a shard's: its stamp (the harness version, the
    settings, every file in ``files``, ``extra``) and the canonical order of its units."""
    inputs: dict[str, bytes | str] = {"harness": __version__,
                                      "settings": settings_text(settings)}
    inputs.update(read_inputs(files))
    inputs.update(extra or {})
    return Sharded(ShardStamp.of(shard, job, inputs), tuple(order))


def refuse_shard(what: str, fix: str) -> ConfigError:
    """The error for a run that cannot be split: names what, and what to do instead."""
    return ConfigError(f"{what} cannot be split into shards", field="--shard", fix=fix)
