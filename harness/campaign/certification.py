"""The entry point of ``certify``, and the certification ``check`` runs.

A providers source (``providers.yaml``, or a gateway's config: ``litellm:…``, ``portkey:…``) is
read through :mod:`harness.gateways.sources`, which is why these jobs sit above ``gateways``
and not in ``contracts``. ``certify`` samples every pairing of the chains (narrowed by
``--provider`` / ``--contract``), judges it, merges the records into the lock file and yields a
certification event per pairing (``gate``, which certifies nothing: :mod:`harness.campaign.gate`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contracts.certifier import (
    DEFAULT_CONCURRENCY,
    CertificationRun,
    PostAudit,
    certify,
    shard_plan,
)
from harness.contracts.certifier import plan as plan_pairings
from harness.contracts.emit import certification
from harness.contracts.events import Certification
from harness.contracts.exchange import Mode
from harness.contracts.judgement import Pairing
from harness.contracts.lock_merge import SHARD_LOCK, LockShard, plan_rows, write_shard_lock
from harness.contracts.records import CertificationRecord
from harness.contracts.standing import certify_command
from harness.contracts.workspace import Workspace
from harness.domain.errors import ConfigError
from harness.domain.shard import Shard
from harness.domain.stream import QUIET, Begin, Folder, Live, Sharded, entry_point
from harness.gateways.options import ProvidersSource
from harness.gateways.sources import audits_for
from harness.scenarios.sharding import sharded, unit

#: where a run's records go: the lock file's commit, or a shard's lock; how many were taken
Commit = Callable[[Iterable[CertificationRecord]], int]


@dataclass(frozen=True, kw_only=True)
class CertifySettings:
    """What ``certify`` certifies, and how it samples."""

    source: ProvidersSource
    mode: Mode = "live"  # record: save cassettes; replay: certify from them, offline
    adaptive: bool = False  # sample in rounds until decided (also when a contract needs it)
    cassettes: Path | None = None  # default: cassettes/ beside the providers file
    provider: str | None = None  # only this provider
    contract: str | None = None  # only this contract
    concurrency: int = DEFAULT_CONCURRENCY
    # --shard K/N: certify only this shard's pairings (each whole), and write their records to
    # the report folder's shard.lock.json for `merge`, not to the lock file. None: every pairing.
    shard: Shard | None = None


def _shard_commit(folder: Folder | None,
                  shard: LockShard) -> Commit:
    """A shard's commit: its records and stamp to ``shard.lock.json`` in the report folder
    (what the CI job uploads, and ``merge`` reads); the lock file is left as it is."""
    if folder is None:
        raise ConfigError("certify --shard writes its records to a report folder, and this run "
                          "has none", field="--shard", fix="run it with a report folder")
    where = folder

    def commit(records: Iterable[CertificationRecord]) -> int:
        return len(write_shard_lock(where() / SHARD_LOCK, records, shard).records)

    return commit


@entry_point
def run_certify(settings: CertifySettings, *, folder: Folder | None = None,
                live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness certify``: a certification event per pairing, the lock updated."""
    workspace = settings.source.open()
    pairings = plan_pairings(workspace.providers, workspace.contracts,
                             only_provider=settings.provider, only_contract=settings.contract,
                             providers_path=str(settings.source.providers))
    commit: Commit = workspace.lock.commit
    lock_shard: LockShard | None = None
    if settings.shard is not None:
        plan, pairings = pairings, shard_plan(pairings, settings.shard)
        stamped = sharded("certify", settings.shard, settings,
                          [settings.source.providers, workspace.lock.path],
                          order=[unit("certification", f"{p.provider.id}/{p.contract.id}")
                                 for p in plan if p.record],
                          extra={"plan": plan_rows(plan)})
        lock_shard = LockShard.of(stamped.stamp, plan, pairings, lock=workspace.lock.path)
        commit = _shard_commit(folder, lock_shard)
    # through a gateway: what the provider got, and what a config in a header makes it send
    audits = audits_for(workspace.providers, pairings, workspace.providers_path)
    yield Begin()  # before certifying: its start time is the run's
    if lock_shard is not None:
        yield Sharded(lock_shard.stamp, stamped.order)
    result, written = yield from certify_pairings(
        workspace, pairings, settings.source, live, adaptive=settings.adaptive,
        mode=settings.mode, cassettes=settings.cassettes or workspace.cassettes_dir,
        concurrency=settings.concurrency, previous=dict(workspace.lock.records), audits=audits,
        commit=commit)
    where = (f"shard {lock_shard.name}: {written} of {lock_shard.planned} pairings, for "
             f"'failover-harness merge'" if lock_shard is not None
             else f"lock file {workspace.lock.path}" + ("" if written else " not changed"))
    live.say(f"{result.calls} calls in {result.wall_s:.2f} s (their latencies sum to "
             f"{result.sequential_s:.2f} s); {where}")
    for path in result.cassettes_written:
        live.say(f"cassette {path}")


def certify_pairings(
    workspace: Workspace, pairings: list[Pairing], source: ProvidersSource, live: Live, *,
    adaptive: bool = False, mode: Mode = "live", cassettes: Path | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    previous: Mapping[tuple[str, str], CertificationRecord] | None = None,
    audits: Sequence[PostAudit] = (), headline: bool = True,
    commit: Commit | None = None,
) -> Generator[Certification, None, tuple[CertificationRun, int]]:
    """Certify ``pairings`` under a bar, commit the records (to the lock, or with ``commit``
    elsewhere: a shard's lock), yield an event per record; return (the run, how many records
    were committed). A contract whose fixed plan cannot decide makes the whole run adaptive
    (said first, before any call is spent)."""
    undecidable = workspace.undecidable([p.contract for p in pairings])
    adaptive = adaptive or any(c.adaptive_decides for c in undecidable)
    for check in undecidable:
        live.say(f"note: {check.text()}")
    if adaptive:  # the most it may spend; a decided provider stops early
        total = sum(p.contract.thresholds.budget_for(len(p.contract.goldens)) for p in pairings)
    else:
        total = sum(len(p.contract.goldens) * p.contract.thresholds.samples for p in pairings)
    label = "certifying" + (" (adaptive: at most)" if adaptive and headline else "")
    with live.bar(label, total) as advance:
        result: CertificationRun = asyncio.run(certify(
            pairings, mode=mode, cassettes=cassettes, concurrency=concurrency,
            on_progress=advance, adaptive=adaptive, previous=previous, audits=audits))
    # A record no call reached is no evidence: it never replaces an earlier one in the lock
    # (written only where the lock has none, so the gate says why the pair is undecided).
    # Merged into the lock as it is now, under a file lock: a concurrent run keeps its records.
    # A record a harness error left undecided (our bug, not evidence) is never written.
    written = (commit or workspace.lock.commit)(result.records)
    if headline:
        how: str = "replayed from cassettes" if mode == "replay" else mode
        fakes = sum(1 for r in result.records if r.fake)
        if fakes and mode != "replay":  # a fake provider answers in process: nothing is "live"
            how = ("fake providers" if fakes == len(result.records)
                   else f"{how}; {fakes} of {len(result.records)} fake providers")
        rule = "adaptive, mixture SPRT" if adaptive else "fixed, Clopper–Pearson"
        live.say(f"certification ({how}; {rule})" if result.records
                 else "certification: no pairing to certify in this run")
    failover = {(p.provider.id, p.contract.id): p.failover for p in pairings}
    for record in result.records:
        link = failover.get(record.key, "")
        command = certify_command(record.provider, record.contract, str(source.providers),
                                  str(source.contracts) if source.contracts else None,
                                  adaptive=adaptive,
                                  lock=str(source.lock) if source.lock else None)
        yield certification(record, link, fix=workspace.fix_for(record, command),
                            gated=link == "auto")
    return result, written
