"""Certify providers against contracts: plan, exchange concurrently with a bound, check, record.

The exchanges (golden inputs × samples × providers) all run at once under one semaphore; the
checks run afterwards on what was observed, so a fallback can be compared with its chain's
primary on the same inputs.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from harness import __version__
from harness.contracts.checks import (
    Sample,
    expected_outcome,
    round_trip_check,
    schema_check,
    stored_outcome,
    tokenization_check,
)
from harness.contracts.exchange import Channel, Mode, open_channel
from harness.contracts.model import Contract, Golden
from harness.contracts.outputs import Judgement, differences
from harness.contracts.records import CertificationRecord, Redactor
from harness.contracts.tokenizers import Tokenizer, load_tokenizer
from harness.domain.clock import Clock, SystemClock
from harness.domain.errors import ConfigError
from harness.providers.config import ProviderConfig, ProvidersFile
from harness.store import open_store

DEFAULT_CONCURRENCY = 64


@dataclass(frozen=True, slots=True)
class Target:
    """One (provider, contract) pair to certify, with its chain's primary and link mode."""

    provider: ProviderConfig
    contract: Contract
    primary: str  # provider id of the chain's first link
    failover: str  # the link's mode: auto | manual | off
    record: bool = True  # False: run only as the reference for fallbacks (not selected)


@dataclass
class CertificationRun:
    """What a certify run produced, and how long its exchanges took."""

    records: list[CertificationRecord]
    targets: list[Target]
    calls: int = 0
    wall_s: float = 0.0
    sequential_s: float = 0.0  # the sum of every call's latency: the cost without concurrency
    cassettes_written: list[Path] = field(default_factory=list)

    def ineligible_auto(self) -> list[tuple[Target, CertificationRecord]]:
        by_key = {r.key: r for r in self.records}
        out = []
        for t in self.targets:
            rec = by_key.get((t.provider.id, t.contract.id))
            if rec is not None and t.failover == "auto" and rec.verdict != "eligible":
                out.append((t, rec))
        return out


def plan(
    providers: ProvidersFile,
    contracts: Mapping[str, Contract],
    *,
    only_provider: str | None = None,
    only_contract: str | None = None,
    providers_path: str = "providers.yaml",
) -> list[Target]:
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
    targets: list[Target] = []
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
                targets.append(Target(
                    providers.providers[link.provider], contract, primary, link.failover,
                    record=selected,
                ))
    if only_provider and not any(t.record for t in targets):
        raise ConfigError(
            f"provider {only_provider!r} is in no chain"
            + (f" for contract {only_contract!r}" if only_contract else ""),
            field="--provider", fix="add it to a chain in the providers file",
        )
    return targets


async def certify(
    targets: list[Target],
    *,
    mode: Mode = "live",
    cassettes: Path | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    clock: Clock | None = None,
    on_progress: Callable[[int], None] | None = None,
    virtual_time: bool = True,
) -> CertificationRun:
    """Run every exchange of ``targets`` (bounded), then the checks; one record per target.

    ``virtual_time`` applies to ``fake://`` providers: their delays cost nothing (the default)
    or are really waited (benchmarks).
    """
    clock = clock or SystemClock()
    # Fail fast on configuration: tokenizers and cassettes, before a single call is made.
    tokenizers = {
        t.provider.id: load_tokenizer(
            t.provider.tokenizer, where=f"providers.{t.provider.id}.tokenizer"
        )
        for t in targets
    }
    channels = {
        (t.provider.id, t.contract.id): open_channel(
            t.provider, t.contract, mode=mode, cassettes=cassettes, virtual_time=virtual_time
        )
        for t in targets
    }
    redact = Redactor.from_env(t.provider.api_key_env for t in targets if t.provider.api_key_env)
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(channel: Channel, golden: Golden, index: int) -> Sample:
        async with semaphore:
            sample = await channel.exchange(golden, index, store, run_id)
        if on_progress:
            on_progress(1)
        return sample

    run_id = uuid.uuid4().hex[:12]
    workdir = tempfile.TemporaryDirectory(prefix="harness-certify-")
    store = open_store(f"sqlite:///{Path(workdir.name) / 'certification.db'}")
    started = time.perf_counter()
    try:
        jobs = {
            key: [
                one(channel, g, i)
                for g in channel.contract.goldens
                for i in range(channel.contract.thresholds.samples)
            ]
            for key, channel in channels.items()
        }
        flat = [job for group in jobs.values() for job in group]
        results = await asyncio.gather(*flat)
    finally:
        for channel in channels.values():
            await channel.aclose()
        store.close()
        workdir.cleanup()
    wall = time.perf_counter() - started
    samples: dict[tuple[str, str], list[Sample]] = {}
    at = 0
    for key, group in jobs.items():
        samples[key] = list(results[at : at + len(group)])
        at += len(group)

    judged = {
        key: [s.judge(channels[key].contract) for s in group] for key, group in samples.items()
    }
    now = clock.now()
    run = CertificationRun([], targets, calls=len(results), wall_s=wall,
                           sequential_s=sum(s.latency_s for s in results))
    for target in targets:
        if not target.record:
            continue
        key = (target.provider.id, target.contract.id)
        reference: dict[str, dict] = {}
        primary_key = (target.primary, target.contract.id)
        if target.primary != target.provider.id and primary_key in judged:
            reference = _primary_reference(target.contract, samples[primary_key])
        run.records.append(_record(
            target, channels[key], samples[key], judged[key], reference,
            tokenizer=tokenizers[target.provider.id], redact=redact, mode=mode, now=now,
        ))
    if any(getattr(t.provider, "via", None) for t in targets):  # certified through a gateway
        from harness.gateways.audit import audit_through_gateway

        run.records = await audit_through_gateway(run.records, targets)
    if mode == "record":
        for channel in channels.values():
            if channel.cassette is not None:
                channel.cassette.write(now)
                run.cassettes_written.append(channel.cassette.path)
    return run


def _primary_reference(contract: Contract, samples: list[Sample]) -> dict[str, dict]:
    """Golden id → the primary's outcome, where the primary matched the golden expectation."""
    expected = {g.id: expected_outcome(contract, g) for g in contract.goldens}
    reference: dict[str, dict] = {}
    for sample in samples:
        if sample.golden_id in reference:
            continue
        outcome, _ = stored_outcome(contract, sample)
        if outcome is not None and not differences(contract, outcome, expected[sample.golden_id]):
            reference[sample.golden_id] = outcome
    return reference


def _record(
    target: Target,
    channel: Channel,
    samples: list[Sample],
    judgements: list[Judgement],
    reference: dict[str, dict],
    *,
    tokenizer: Tokenizer,
    redact: Redactor,
    mode: Mode,
    now: datetime,
) -> CertificationRecord:
    cfg, contract = target.provider, target.contract
    checks = (
        schema_check(
            contract, temperature=cfg.temperature, samples=samples, judgements=judgements,
            redact=redact, measured=mode != "replay",  # a replayed latency measures nothing
        ),
        tokenization_check(
            contract, tokenizer=tokenizer, context_window=cfg.context_window,
            max_output_tokens=cfg.max_output_tokens, kind=cfg.kind,
            build_body=channel.build_body, redact=redact,
        ),
        round_trip_check(
            contract, samples=samples,
            primary=target.primary if target.primary != cfg.id else None,
            primary_outcomes=reference, redact=redact,
        ),
    )
    return CertificationRecord(
        provider=cfg.id,
        contract=contract.id,
        contract_version=contract.version,
        model=cfg.model,
        kind=cfg.kind,
        config_hash=cfg.config_hash(),
        contract_hash=contract.hash,
        verdict="eligible" if all(c.passed for c in checks) else "ineligible",
        mode="replayed" if mode == "replay" else "live",
        harness_version=__version__,
        certified_at=now,
        expires_at=now + timedelta(days=contract.thresholds.valid_days),
        checks=checks,
        config=cfg.hashed_fields(),
    )
