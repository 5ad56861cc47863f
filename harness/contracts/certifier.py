"""Certify providers against contracts: plan, exchange concurrently with a bound, check, record.

The exchanges (golden inputs × samples × providers) run at once under one semaphore — all of
them in a fixed run, one balanced round at a time with ``adaptive`` — and the checks run on
what was observed, so a fallback can be compared with its chain's primary on the same inputs.
A :class:`Certification` holds one run's steps: the plan (channels, tokenizers), the sampling,
the judgement (``contracts/judgement.py``) and the record (audits, cassettes).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.contracts.checks import Sample
from harness.contracts.exchange import Channel, Mode, open_channel
from harness.contracts.judgement import (
    NOT_SENT,
    Judging,
    Pairing,
    harness_error,
    judge,
    reference,
)
from harness.contracts.model import Contract, Golden
from harness.contracts.records import CertificationRecord, Redactor
from harness.contracts.standing import has_harness_error
from harness.contracts.stats import Rule
from harness.contracts.tokenizers import load_tokenizer
from harness.domain.clock import Clock, SystemClock
from harness.domain.errors import ConfigError
from harness.domain.shard import Shard
from harness.providers.classify import REFUSED_EVERY_CALL
from harness.providers.config import ProvidersFile
from harness.store import Store, open_store

DEFAULT_CONCURRENCY = 64
UNREACHED_STOP = 3  # calls in a row that could not reach a provider: the rest are not sent


@dataclass
class _Reach:
    """Do a channel's calls reach a model? Until one has, they go one at a time, and after
    :data:`UNREACHED_STOP` in a row that could not (DNS, connect, TLS, a refused key) or were
    refused before any answer (a 4xx: a gateway's missing header), the rest are not sent: the
    same error 60 times is no more evidence than 3 times."""

    reached: bool = False
    in_a_row: int = 0
    why: str = ""  # the first reason a call could not reach it ("DNS lookup failed")
    error: str = ""  # …and that call's error
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def stopped(self) -> bool:
        return self.in_a_row >= UNREACHED_STOP

    def note(self, sample: Sample) -> None:
        refused = sample.refused and not self.reached  # refused before any call was answered
        if sample.unreached or refused:
            self.in_a_row += 1
            if not self.why:
                self.why = sample.unreached or f"{REFUSED_EVERY_CALL} ({sample.refused})"
                self.error = sample.error or ""
        else:
            self.reached, self.in_a_row = True, 0


#: A check run after the samples, on the records and their pairings (the gateway audit: what the
#: provider behind a gateway received); it returns the records, amended.
PostAudit = Callable[[list[CertificationRecord], list[Pairing]],
                     Awaitable[list[CertificationRecord]]]


@dataclass
class CertificationRun:
    """What a certify run produced, and how long its exchanges took."""

    records: list[CertificationRecord]
    pairings: list[Pairing]
    calls: int = 0
    wall_s: float = 0.0
    sequential_s: float = 0.0  # the sum of every call's latency: the cost without concurrency
    cassettes_written: list[Path] = field(default_factory=list)

    def auto_with(self, verdict: str) -> list[tuple[Pairing, CertificationRecord]]:
        """The ``auto`` links whose new record has ``verdict``."""
        by_key = {r.key: r for r in self.records}
        out = []
        for t in self.pairings:
            rec = by_key.get((t.provider.id, t.contract.id))
            if rec is not None and t.failover == "auto" and rec.verdict == verdict:
                out.append((t, rec))
        return out

    def ineligible_auto(self) -> list[tuple[Pairing, CertificationRecord]]:
        return self.auto_with("ineligible")

    def undecided_auto(self) -> list[tuple[Pairing, CertificationRecord]]:
        return self.auto_with("undecided")

    @property
    def exit_code(self) -> int:
        """1 an auto link ineligible; 3 none, but one undecided (unknown); else 0."""
        return 1 if self.ineligible_auto() else 3 if self.undecided_auto() else 0


def plan(
    providers: ProvidersFile,
    contracts: Mapping[str, Contract],
    *,
    only_provider: str | None = None,
    only_contract: str | None = None,
    providers_path: str = "providers.yaml",
) -> list[Pairing]:
    """The pairs to certify: every link of every chain, narrowed by the filters."""
    if only_provider and only_provider not in providers.providers:
        raise ConfigError(
            f"unknown provider {only_provider!r}", field="--provider",
            fix=f"use one of: {', '.join(sorted(providers.providers))}",
        )
    if only_contract and only_contract not in providers.chains:
        raise ConfigError(
            f"no chain for contract {only_contract!r} in {providers_path}", field="--contract",
            fix=f"use one of: {', '.join(sorted(providers.chains)) or '(no chains defined)'}",
        )
    pairings: list[Pairing] = []
    for contract_id, chain in sorted(providers.chains.items()):
        if only_contract and contract_id != only_contract:
            continue
        contract = contracts.get(contract_id)
        if contract is None:
            raise ConfigError(
                f"the chain for contract {contract_id!r} has no contract folder",
                file=providers_path, field=f"chains.{contract_id}",
                fix=f"create contracts/{contract_id}/contract.yaml or pass --contracts DIR",
            )
        primary = chain[0].provider
        for link in chain:
            selected = only_provider is None or link.provider == only_provider
            if selected or link.provider == primary:
                pairings.append(Pairing(
                    providers.providers[link.provider], contract, primary, link.failover,
                    record=selected,
                ))
    if only_provider and not any(t.record for t in pairings):
        raise ConfigError(
            f"provider {only_provider!r} is in no chain"
            + (f" for contract {only_contract!r}" if only_contract else ""),
            field="--provider", fix="add it to a chain in the providers file",
        )
    return pairings


def shard_plan(pairings: list[Pairing], shard: Shard) -> list[Pairing]:
    """The pairings ``shard`` certifies, whole: the recorded pairings in canonical order
    (contract, provider, model: the same on every machine), round-robin over the shards; a
    fallback whose chain primary another shard certifies gets that primary here too, run only
    as its reference (``record=False``, as ``--provider`` does). In plan order."""
    canonical = sorted((p for p in pairings if p.record),
                       key=lambda p: (p.contract.id, p.provider.id, p.provider.model))
    owned = {(p.provider.id, p.contract.id) for i, p in enumerate(canonical) if shard.owns(i)}
    references = {(p.primary, p.contract.id) for p in pairings
                  if (p.provider.id, p.contract.id) in owned}
    return [replace(p, record=(p.provider.id, p.contract.id) in owned) for p in pairings
            if (p.provider.id, p.contract.id) in owned | references]


async def certify(
    pairings: list[Pairing],
    *,
    mode: Mode = "live",
    cassettes: Path | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    clock: Clock | None = None,
    on_progress: Callable[[int], None] | None = None,
    virtual_time: bool = True,
    adaptive: bool = False,
    previous: Mapping[tuple[str, str], CertificationRecord] | None = None,
    audits: Sequence[PostAudit] = (),
) -> CertificationRun:
    """Sample every pairing (bounded concurrency), judge, and return one record per pairing.

    Fixed (the default): K samples of every golden input at once, judged by exact
    Clopper–Pearson bounds. ``adaptive``: rounds of one sample per input for every provider
    still undecided, judged after each round by the mixture SPRT (anytime-valid), until every
    provider is decided or its budget is spent. ``previous`` (the lock's records) gives each
    record its drift. ``audits`` run on the records once every sample is judged (the command
    passes the gateway audit when a provider is reached through a gateway). ``virtual_time``
    applies to ``fake://`` providers: their delays cost nothing (the default) or are really
    waited (benchmarks).
    """
    now = (clock or SystemClock()).now()
    rule: Rule = "mixture-sprt" if adaptive else "clopper-pearson"
    redact = Redactor.from_env(p.provider.api_key_env for p in pairings if p.provider.api_key_env)
    certification = Certification(
        pairings, Judging(redact=redact, mode=mode, now=now, rule=rule, adaptive=adaptive),
        cassettes=cassettes, virtual_time=virtual_time, previous=previous or {},
    )
    return await certification.run(concurrency, on_progress, audits)


class Certification:
    """One certify run as steps: the plan (here), :meth:`sample`, :meth:`judge`, :meth:`record`.

    The plan fails fast on configuration (tokenizers, cassettes) before a single call is made.
    """

    def __init__(
        self, pairings: list[Pairing], judging: Judging, *, cassettes: Path | None,
        virtual_time: bool, previous: Mapping[tuple[str, str], CertificationRecord],
    ) -> None:
        self.pairings, self.judging, self.previous = pairings, judging, previous
        self.by_key = {(p.provider.id, p.contract.id): p for p in pairings}
        self.tokenizers = {
            p.provider.id: load_tokenizer(
                p.provider.tokenizer, where=f"providers.{p.provider.id}.tokenizer"
            )
            for p in pairings
        }
        self.channels: dict[tuple[str, str], Channel] = {
            key: open_channel(
                p.provider, p.contract, mode=judging.mode, cassettes=cassettes,
                virtual_time=virtual_time, adaptive=judging.adaptive,
            )
            for key, p in self.by_key.items()
        }
        self.samples: dict[tuple[str, str], list[Sample]] = {k: [] for k in self.channels}
        self.rounds: dict[tuple[str, str], int] = dict.fromkeys(self.channels, 0)
        self.reaches = {key: _Reach() for key in self.channels}
        self.records: dict[tuple[str, str], CertificationRecord] = {}
        self.result = CertificationRun([], pairings)

    async def run(
        self, concurrency: int, on_progress: Callable[[int], None] | None,
        audits: Sequence[PostAudit],
    ) -> CertificationRun:
        """Sample (in a scratch store), judge every selected pairing, then record."""
        sampling = _Sampling(self, asyncio.Semaphore(max(1, concurrency)), on_progress)
        started = time.perf_counter()
        try:
            await self.sample(sampling)
        finally:
            for channel in self.channels.values():
                await channel.aclose()
            sampling.close()
        self.result.wall_s = time.perf_counter() - started
        # Fallbacks judged before the primary's last round are judged again: same verdict logic,
        # the primary's full evidence as reference.
        self.judge([k for k in self.channels if self.by_key[k].record])
        return await self.record(audits)

    async def sample(self, sampling: _Sampling) -> None:
        """Fixed: every sample at once. Adaptive: rounds, judged after each, while undecided."""
        if not self.judging.adaptive:
            await sampling.round({
                key: channel.contract.thresholds.samples for key, channel in self.channels.items()
            })
            return
        active = list(self.channels)
        while active:
            await sampling.round(dict.fromkeys(active, 1))
            self.judge(active)
            active = [key for key in active if not self.reaches[key].stopped and _continue(
                self.by_key[key], self.channels[key], self.records.get(key), self.rounds[key])]

    def judge(self, keys: list[tuple[str, str]]) -> None:
        """The record of every selected pairing among ``keys``, on its samples so far."""
        for key in keys:
            pairing = self.by_key[key]
            if pairing.record:
                self.records[key] = judge(
                    pairing, self.channels[key], self.samples[key],
                    reference(pairing, self.samples),
                    tokenizer=self.tokenizers[pairing.provider.id], judging=self.judging,
                    rounds=self.rounds[key], previous=self.previous.get(key),
                )

    async def record(self, audits: Sequence[PostAudit]) -> CertificationRun:
        """The records in plan order, amended by the audits; with ``record``, the cassettes."""
        run = self.result
        run.records = [self.records[(p.provider.id, p.contract.id)]
                       for p in self.pairings if p.record]
        for audit in audits:
            run.records = await audit(run.records, self.pairings)
        if self.judging.mode == "record":
            for channel in self.channels.values():
                if channel.cassette is not None:
                    channel.cassette.write(self.judging.now)
                    run.cassettes_written.append(channel.cassette.path)
        return run


class _Sampling:
    """The exchanges of one run: a bound on calls in flight, a scratch store the failover
    runner writes to, and per channel one call at a time until a call reaches the model."""

    def __init__(self, cert: Certification, semaphore: asyncio.Semaphore,
                 on_progress: Callable[[int], None] | None) -> None:
        self.cert, self.semaphore, self.on_progress = cert, semaphore, on_progress
        self.run_id = uuid.uuid4().hex[:12]
        self.workdir = tempfile.TemporaryDirectory(prefix="harness-certify-")
        self.store: Store = open_store(
            f"sqlite:///{Path(self.workdir.name) / 'certification.db'}")

    def close(self) -> None:
        self.store.close()
        self.workdir.cleanup()

    async def round(self, per_input: Mapping[tuple[str, str], int]) -> None:
        """``per_input[key]`` more samples of every golden input, for every key, at once."""
        cert, run = self.cert, self.cert.result
        jobs = {
            key: [
                self.one(key, g, cert.rounds[key] + i)
                for i in range(n)
                for g in cert.channels[key].contract.goldens
            ]
            for key, n in per_input.items()
        }
        results = await asyncio.gather(*[job for group in jobs.values() for job in group])
        at = 0
        for key, group in jobs.items():
            cert.samples[key].extend(results[at : at + len(group)])
            at += len(group)
            cert.rounds[key] += per_input[key]
        run.calls += sum(1 for s in results if s.runner != NOT_SENT)
        run.sequential_s += sum(s.latency_s for s in results)

    async def one(self, key: tuple[str, str], golden: Golden, index: int) -> Sample:
        reach = self.cert.reaches[key]
        if not reach.reached:  # one call at a time until a call reaches the model
            async with reach.lock:
                if not reach.reached:
                    return await self.call(key, golden, index)
        return await self.call(key, golden, index)

    async def call(self, key: tuple[str, str], golden: Golden, index: int) -> Sample:
        reach, channel = self.cert.reaches[key], self.cert.channels[key]
        if reach.stopped:  # the provider could not be reached: the rest is not sent
            sample = Sample(golden.id, index, error=f"not sent: {reach.error}", runner=NOT_SENT,
                            unreached=reach.why)
            if channel.cassette is not None:  # recorded: a replay stops the same way
                channel.cassette.mark_not_sent(f"{golden.id}#{index}", reach.why)
        else:
            async with self.semaphore:
                try:
                    sample = await channel.exchange(golden, index, self.store, self.run_id)
                except Exception as exc:  # our own code failed on what a provider returned:
                    why = harness_error("processing this answer", exc)  # never the provider's
                    sample = Sample(golden.id, index, error=why, runner="not judged",
                                    harness_error=why)
            reach.note(sample)
        if self.on_progress:
            self.on_progress(1)
        return sample


def _continue(
    pairing: Pairing, channel: Channel, record: CertificationRecord | None, rounds: int
) -> bool:
    """Adaptive: sample another round? While undecided, within budget, and (replay) recorded."""
    contract = pairing.contract
    if record is not None and (record.verdict != "undecided" or has_harness_error(record)):
        return False  # decided, or our own bug: more samples would not decide it
    if record is None and rounds >= 1:  # a reference-only primary: one round is enough
        return False
    inputs = len(contract.goldens)
    if (rounds + 1) * inputs > contract.thresholds.budget_for(inputs):
        return False
    return all(channel.available(g, rounds) for g in contract.goldens)
