"""Certify providers against contracts: plan, exchange concurrently with a bound, check, record.

The exchanges (golden inputs × samples × providers) run at once under one semaphore — all of
them in a fixed run, one balanced round at a time with ``adaptive`` — and the checks run on
what was observed, so a fallback can be compared with its chain's primary on the same inputs.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from harness import __version__
from harness.console import clean
from harness.contracts.checks import (
    Sample,
    expected_outcome,
    round_trip_check,
    round_trip_outcomes,
    schema_check,
    stored_outcome,
    tokenization_check,
)
from harness.contracts.drift import drift, tally
from harness.contracts.exchange import Channel, Mode, open_channel
from harness.contracts.model import Contract, Golden
from harness.contracts.outputs import differences
from harness.contracts.records import (
    FAKE_PROVENANCE,
    UNREACHED,
    CertificationRecord,
    CheckResult,
    Evidence,
    Redactor,
    Sampling,
    Verdict,
)
from harness.contracts.stats import Rule
from harness.contracts.tokenizers import Tokenizer, load_tokenizer
from harness.domain.clock import Clock, SystemClock
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.providers.config import ProviderConfig, ProvidersFile
from harness.store import open_store

DEFAULT_CONCURRENCY = 64
UNREACHED_STOP = 3  # calls in a row that could not reach a provider: the rest are not sent
NOT_SENT = "not sent (the provider could not be reached)"
_CLASSIFIED = re.compile(r" \[(failed|unknown): [^\]]*\].*$")  # ProviderCallError's trailer


@dataclass
class _Reach:
    """Do a channel's calls reach a model? Until one has, they go one at a time, and after
    :data:`UNREACHED_STOP` in a row that could not (DNS, connect, TLS, a refused key), the
    rest are not sent: the same error 60 times is no more evidence than 3 times."""

    reached: bool = False
    in_a_row: int = 0
    why: str = ""  # the first reason a call could not reach it ("DNS lookup failed")
    error: str = ""  # …and that call's error
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def stopped(self) -> bool:
        return self.in_a_row >= UNREACHED_STOP

    def note(self, sample: Sample) -> None:
        if sample.unreached:
            self.in_a_row += 1
            if not self.why:
                self.why, self.error = sample.unreached, sample.error or ""
        else:
            self.reached, self.in_a_row = True, 0


@dataclass(frozen=True, slots=True)
class Target:
    """One (provider, contract) pair to certify, with its chain's primary and link mode."""

    provider: ProviderConfig
    contract: Contract
    primary: str  # provider id of the chain's first link
    failover: str  # the link's mode: auto | manual | off
    record: bool = True  # False: run only as the reference for fallbacks (not selected)


#: A check run after the samples, on the records and their targets (the gateway audit: what the
#: provider behind a gateway received); it returns the records, amended.
PostAudit = Callable[[list[CertificationRecord], list[Target]],
                     Awaitable[list[CertificationRecord]]]


@dataclass
class CertificationRun:
    """What a certify run produced, and how long its exchanges took."""

    records: list[CertificationRecord]
    targets: list[Target]
    calls: int = 0
    wall_s: float = 0.0
    sequential_s: float = 0.0  # the sum of every call's latency: the cost without concurrency
    cassettes_written: list[Path] = field(default_factory=list)

    def auto_with(self, verdict: str) -> list[tuple[Target, CertificationRecord]]:
        """The ``auto`` links whose new record has ``verdict``."""
        by_key = {r.key: r for r in self.records}
        out = []
        for t in self.targets:
            rec = by_key.get((t.provider.id, t.contract.id))
            if rec is not None and t.failover == "auto" and rec.verdict == verdict:
                out.append((t, rec))
        return out

    def ineligible_auto(self) -> list[tuple[Target, CertificationRecord]]:
        return self.auto_with("ineligible")

    def undecided_auto(self) -> list[tuple[Target, CertificationRecord]]:
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
    adaptive: bool = False,
    previous: Mapping[tuple[str, str], CertificationRecord] | None = None,
    audits: Sequence[PostAudit] = (),
) -> CertificationRun:
    """Sample every target (bounded concurrency), judge, and return one record per target.

    Fixed (the default): K samples of every golden input at once, judged by exact
    Clopper–Pearson bounds. ``adaptive``: rounds of one sample per input for every provider
    still undecided, judged after each round by the mixture SPRT (anytime-valid), until every
    provider is decided or its budget is spent. ``previous`` (the lock's records) gives each
    record its drift. ``audits`` run on the records once every sample is judged (the command
    passes the gateway audit when a provider is reached through a gateway). ``virtual_time``
    applies to ``fake://`` providers: their delays cost nothing (the default) or are really
    waited (benchmarks).
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
            t.provider, t.contract, mode=mode, cassettes=cassettes, virtual_time=virtual_time,
            adaptive=adaptive,
        )
        for t in targets
    }
    redact = Redactor.from_env(t.provider.api_key_env for t in targets if t.provider.api_key_env)
    semaphore = asyncio.Semaphore(max(1, concurrency))
    rule: Rule = "mixture-sprt" if adaptive else "clopper-pearson"
    samples: dict[tuple[str, str], list[Sample]] = {key: [] for key in channels}
    rounds: dict[tuple[str, str], int] = dict.fromkeys(channels, 0)
    run = CertificationRun([], targets)

    reaches = {key: _Reach() for key in channels}

    async def one(key: tuple[str, str], golden: Golden, index: int) -> Sample:
        reach = reaches[key]
        if not reach.reached:  # one call at a time until a call reaches the model
            async with reach.lock:
                if not reach.reached:
                    return await call(key, golden, index)
        return await call(key, golden, index)

    async def call(key: tuple[str, str], golden: Golden, index: int) -> Sample:
        reach = reaches[key]
        if reach.stopped:  # the provider could not be reached: the rest is not sent
            sample = Sample(golden.id, index, error=f"not sent: {reach.error}", runner=NOT_SENT,
                            unreached=reach.why)
            cassette = channels[key].cassette
            if cassette is not None:  # recorded: a replay stops the same way
                cassette.mark_not_sent(f"{golden.id}#{index}", reach.why)
        else:
            async with semaphore:
                try:
                    sample = await channels[key].exchange(golden, index, store, run_id)
                except Exception as exc:  # what a provider returned must never stop the run
                    sample = Sample(golden.id, index, error=(
                        f"harness error while processing this answer ({type(exc).__name__}: "
                        f"{clean(exc, limit=200, one_line=True)}); counted as a failed sample"
                    ), runner="not judged")
            reach.note(sample)
        if on_progress:
            on_progress(1)
        return sample

    async def sample_round(per_input: Mapping[tuple[str, str], int]) -> None:
        """``per_input[key]`` more samples of every golden input, for every key, at once."""
        jobs = {
            key: [
                one(key, g, rounds[key] + i)
                for i in range(n)
                for g in channels[key].contract.goldens
            ]
            for key, n in per_input.items()
        }
        flat = [job for group in jobs.values() for job in group]
        results = await asyncio.gather(*flat)
        at = 0
        for key, group in jobs.items():
            samples[key].extend(results[at : at + len(group)])
            at += len(group)
            rounds[key] += per_input[key]
        run.calls += sum(1 for s in results if s.runner != NOT_SENT)
        run.sequential_s += sum(s.latency_s for s in results)

    run_id = uuid.uuid4().hex[:12]
    workdir = tempfile.TemporaryDirectory(prefix="harness-certify-")
    store = open_store(f"sqlite:///{Path(workdir.name) / 'certification.db'}")
    started = time.perf_counter()
    by_key = {(t.provider.id, t.contract.id): t for t in targets}
    now = clock.now()
    records: dict[tuple[str, str], CertificationRecord] = {}

    def judge_all(keys: list[tuple[str, str]]) -> None:
        for key in keys:
            target = by_key[key]
            if target.record:
                records[key] = _record(
                    target, channels[key], samples[key], _reference(target, samples),
                    tokenizer=tokenizers[target.provider.id], redact=redact, mode=mode,
                    now=now, rule=rule, rounds=rounds[key], adaptive=adaptive,
                    previous=(previous or {}).get(key),
                )

    try:
        if not adaptive:
            await sample_round({
                key: channel.contract.thresholds.samples for key, channel in channels.items()
            })
        else:
            active = list(channels)
            while active:
                await sample_round(dict.fromkeys(active, 1))
                judge_all(active)
                active = [key for key in active if not reaches[key].stopped and _continue(
                    by_key[key], channels[key], records.get(key), rounds[key])]
    finally:
        for channel in channels.values():
            await channel.aclose()
        store.close()
        workdir.cleanup()
    run.wall_s = time.perf_counter() - started
    # Fallbacks judged before the primary's last round are judged again: same verdict logic,
    # the primary's full evidence as reference.
    judge_all([k for k in channels if by_key[k].record])
    run.records = [records[(t.provider.id, t.contract.id)] for t in targets if t.record]
    for audit in audits:
        run.records = await audit(run.records, targets)
    if mode == "record":
        for channel in channels.values():
            if channel.cassette is not None:
                channel.cassette.write(now)
                run.cassettes_written.append(channel.cassette.path)
    return run


def _continue(
    target: Target, channel: Channel, record: CertificationRecord | None, rounds: int
) -> bool:
    """Adaptive: sample another round? While undecided, within budget, and (replay) recorded."""
    contract = target.contract
    if record is not None and record.verdict != "undecided":
        return False
    if record is None and rounds >= 1:  # a reference-only primary: one round is enough
        return False
    inputs = len(contract.goldens)
    if (rounds + 1) * inputs > contract.thresholds.budget_for(inputs):
        return False
    return all(channel.available(g, rounds) for g in contract.goldens)


def _provider_counts(samples: list[Sample], *, trust: bool) -> dict[str, int]:
    """Golden id → the provider's own prompt token count (the most any reply reported).

    A fake provider's usage figures are made up: not trusted (``trust=False``)."""
    counts: dict[str, int] = {}
    if not trust:
        return counts
    for sample in samples:
        if isinstance(sample.input_tokens, int) and sample.input_tokens > 0:
            counts[sample.golden_id] = max(counts.get(sample.golden_id, 0), sample.input_tokens)
    return counts


def _reference(
    target: Target, samples: Mapping[tuple[str, str], list[Sample]]
) -> dict[str, dict]:
    primary_key = (target.primary, target.contract.id)
    if target.primary == target.provider.id or primary_key not in samples:
        return {}
    return _primary_reference(target.contract, samples[primary_key])


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
    reference: dict[str, dict],
    *,
    tokenizer: Tokenizer,
    redact: Redactor,
    mode: Mode,
    now: datetime,
    rule: Rule,
    rounds: int,
    adaptive: bool,
    previous: CertificationRecord | None,
) -> CertificationRecord:
    cfg, contract = target.provider, target.contract
    fake = bool(cfg.is_fake or channel.fake_answers)
    # A call that never reached a model (DNS, connect, TLS, a refused key) says nothing about
    # the contract: it is left out, and when no call reached it the record says only that.
    lost = [s for s in samples if s.unreached]
    samples = [s for s in samples if not s.unreached]
    judgements = [s.judge(contract) for s in samples]
    primary = target.primary if target.primary != cfg.id else None
    trips = round_trip_outcomes(
        contract, samples=samples, primary=primary, primary_outcomes=reference
    )
    checks: tuple[CheckResult, ...] = (
        schema_check(
            contract, temperature=cfg.temperature, samples=samples, judgements=judgements,
            redact=redact, measured=mode != "replay", rule=rule,  # a replayed latency: nothing
        ),
        tokenization_check(
            contract, tokenizer=tokenizer, context_window=cfg.context_window,
            max_output_tokens=cfg.max_output_tokens, kind=cfg.kind, model=cfg.model,
            redact=redact, counted=_provider_counts(samples, trust=not fake),
        ),
        round_trip_check(
            contract, samples=samples, primary=primary, primary_outcomes=reference,
            redact=redact, rule=rule, outcomes=trips,
        ),
    )
    inputs = tally(
        [s.golden_id for s in samples],
        {
            "schema": [(j.ok, j.reason or "") for j in judgements],
            "round_trip": [(ok, why) for ok, why, _ in trips],
        },
    )
    unreached = ""
    if lost:
        unreached = _unreached(cfg, lost)
        checks = _not_reached(checks, unreached, lost=len(lost), judged=len(samples))
        if samples:
            unreached = ""  # some calls reached it: judged on those
    decisions = {c.decision for c in checks}
    verdict: Verdict = (
        "ineligible" if "fail" in decisions else "undecided" if "undecided" in decisions
        else "eligible"
    )
    return CertificationRecord(
        provider=cfg.id,
        contract=contract.id,
        contract_version=contract.version,
        model=cfg.model,
        kind=cfg.kind,
        config_hash=cfg.config_hash(),
        contract_hash=contract.hash,
        verdict=verdict,
        mode="replayed" if mode == "replay" else "live",
        harness_version=__version__,
        certified_at=now,
        expires_at=now + timedelta(days=contract.thresholds.valid_days),
        checks=checks,
        config=cfg.hashed_fields(),
        sampling=Sampling(
            rule=rule, confidence=contract.thresholds.confidence, k=rounds, rounds=rounds,
            calls=len(samples) + sum(1 for s in lost if s.runner != NOT_SENT),
            adaptive=adaptive,
            budget=contract.thresholds.budget_for(len(contract.goldens)) if adaptive else None,
            seeded=channel.seeded,
        ),
        inputs=inputs,
        drift=drift(previous, inputs, confidence=contract.thresholds.confidence),
        provenance=FAKE_PROVENANCE if fake else "",
        unreached=unreached,
        contract_parts=dict(contract.parts),
    )


def _unreached(cfg: ProviderConfig, lost: list[Sample]) -> str:
    """``could not reach 'x' at URL: DNS lookup failed (ConnectError: …)``."""
    first = lost[0]
    error = (first.error or "").removeprefix("not sent: ").removeprefix("failed: ")
    error = _CLASSIFIED.sub("", error.removeprefix(f"{cfg.id}: "))
    where = cfg.base_url + (" (the gateway)" if cfg.via else "")
    return clean(f"could not reach {cfg.id!r} at {where}: {first.unreached} ({error})",
                 one_line=True, limit=400)


def _not_reached(
    checks: tuple[CheckResult, ...], reason: str, *, lost: int, judged: int
) -> tuple[CheckResult, ...]:
    """The sampled checks when ``lost`` calls could not reach the provider: undecided (no
    evidence) when none did, else judged on the ``judged`` that did, saying how many did not."""
    out = []
    for check in checks:
        if check.stats is None:  # deterministic (tokenization): needs no call
            out.append(check)
        elif not judged:
            out.append(CheckResult.build(
                check.name, "undecided", f"{UNREACHED}: {reason}",
                {"samples": 0, "unreached": lost}, [Evidence("*", reason)],
            ))
        else:
            out.append(replace(
                check, figures={**check.figures, "unreached": lost},
                summary=f"{check.summary}; {counted(lost, 'call')} that could not reach the "
                f"provider {'is' if lost == 1 else 'are'} not counted",
            ))
    return tuple(out)
