"""Judge one (provider, contract) pairing on its samples: the checks, the verdict, the record.

What never counts against a provider: a call that could not reach it (``unreached``: no
evidence about the contract), every call refused before any answer (a 4xx from the provider or
a gateway in front of it — a missing routing header, a wrong key or route: no answer, so no
evidence either; some refused among answers are judged as failed calls) and a harness error
(an exception in our own code while processing an answer or judging it). A harness error
makes the sampled checks undecided with :data:`HARNESS_ERROR` as their reason;
certify then keeps the record out of the lock file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

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
from harness.contracts.exchange import Channel, Mode
from harness.contracts.model import Contract
from harness.contracts.outputs import differences
from harness.contracts.records import (
    FAKE_PROVENANCE,
    UNREACHED,
    CertificationRecord,
    ContractCheck,
    Evidence,
    InputTally,
    Redactor,
    Sampling,
    Verdict,
)
from harness.contracts.standing import HARNESS_ERROR
from harness.contracts.stats import Rule
from harness.contracts.tokenizers import Tokenizer
from harness.domain.words import counted
from harness.providers.classify import REFUSED_EVERY_CALL
from harness.providers.config import ProviderConfig

NOT_SENT = "not sent (the provider could not be reached)"
SAMPLED_CHECKS = ("schema", "round_trip")
ALL_CHECKS = ("schema", "tokenization", "round_trip")  # in the order of a record
_CLASSIFIED = re.compile(r" \[(failed|unknown): [^\]]*\].*$")  # ProviderCallError's trailer


def harness_error(what: str, exc: BaseException) -> str:
    """``harness error while processing this answer (KeyError: 'x')``: one line, shortened."""
    return (f"harness error while {what} ({type(exc).__name__}: "
            f"{clean(exc, limit=200, one_line=True)})")


@dataclass(frozen=True, slots=True)
class Pairing:
    """One (provider, contract) pair to certify, with its chain's primary and link mode."""

    provider: ProviderConfig
    contract: Contract
    primary: str  # provider id of the chain's first link
    failover: str  # the link's mode: auto | manual | off
    record: bool = True  # False: run only as the reference for fallbacks (not selected)


@dataclass(frozen=True, slots=True)
class Judging:
    """What every pairing of a run is judged with (the same for all of them)."""

    redact: Redactor
    mode: Mode
    now: datetime
    rule: Rule
    adaptive: bool


def judge(
    pairing: Pairing,
    channel: Channel,
    samples: list[Sample],
    reference: dict[str, dict],
    *,
    tokenizer: Tokenizer,
    judging: Judging,
    rounds: int,
    previous: CertificationRecord | None,
) -> CertificationRecord:
    """The record of ``pairing`` on ``samples``; a harness error leaves it undecided."""
    lost = [s for s in samples if s.unreached]
    broken = [s for s in samples if s.harness_error]
    judged = [s for s in samples if not s.unreached and not s.harness_error]
    if judged and all(s.refused for s in judged):  # no call answered: every one was refused
        lost = [*(replace(s, unreached=f"{REFUSED_EVERY_CALL} ({s.refused})") for s in judged),
                *lost]
        judged = []
    cfg, contract = pairing.provider, pairing.contract
    fake = bool(cfg.is_fake or channel.fake_answers)
    inputs: dict[str, InputTally] = {}
    try:
        checks, inputs = _checks(pairing, judged, reference, tokenizer, judging, fake=fake)
    except Exception as exc:  # our own checking code: never the provider's failure
        checks = _harness_failed((), harness_error("judging the samples", exc), len(judged))
    unreached = ""
    if lost:
        unreached = _unreached(cfg, lost)
        checks = _not_reached(checks, unreached, lost=len(lost), judged=len(judged))
        if judged or broken:
            unreached = ""  # some calls reached it: judged on those
    if broken:
        checks = _harness_failed(checks, broken[0].harness_error, len(broken))
    sampling = Sampling(
        rule=judging.rule, confidence=contract.thresholds.confidence, k=rounds, rounds=rounds,
        calls=len(judged) + len(broken) + sum(1 for s in lost if s.runner != NOT_SENT),
        adaptive=judging.adaptive,
        budget=contract.thresholds.budget_for(len(contract.goldens)) if judging.adaptive else None,
        seeded=channel.seeded,
    )
    return CertificationRecord(
        provider=cfg.id, contract=contract.id, contract_version=contract.version,
        model=cfg.model, kind=cfg.kind, config_hash=cfg.config_hash(),
        contract_hash=contract.hash, verdict=_verdict(checks),
        mode="replayed" if judging.mode == "replay" else "live",
        harness_version=__version__, certified_at=judging.now,
        expires_at=judging.now + timedelta(days=contract.thresholds.valid_days),
        checks=checks, config=cfg.hashed_fields(), sampling=sampling, inputs=inputs,
        drift=drift(previous if inputs else None, inputs,  # no call judged: no drift
                    confidence=contract.thresholds.confidence),
        provenance=FAKE_PROVENANCE if fake else "", unreached=unreached,
        contract_parts=dict(contract.parts),
    )


def _verdict(checks: tuple[ContractCheck, ...]) -> Verdict:
    decisions = {c.decision for c in checks}
    return ("ineligible" if "broken" in decisions else "undecided" if "unknown" in decisions
            else "eligible")


def _checks(
    pairing: Pairing, samples: list[Sample], reference: dict[str, dict], tokenizer: Tokenizer,
    judging: Judging, *, fake: bool,
) -> tuple[tuple[ContractCheck, ...], dict[str, InputTally]]:
    """The three checks on the samples that reached the provider, and the per-input tally."""
    cfg, contract, redact, rule = pairing.provider, pairing.contract, judging.redact, judging.rule
    judgements = [s.judge(contract) for s in samples]
    primary = pairing.primary if pairing.primary != cfg.id else None
    trips = round_trip_outcomes(
        contract, samples=samples, primary=primary, primary_outcomes=reference
    )
    checks = (
        schema_check(  # a replayed latency measures nothing
            contract, temperature=cfg.temperature, samples=samples, judgements=judgements,
            redact=redact, measured=judging.mode != "replay", rule=rule,
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
    return checks, inputs


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


def reference(
    pairing: Pairing, samples: Mapping[tuple[str, str], list[Sample]]
) -> dict[str, dict]:
    """A fallback's reference: its chain primary's outcomes, where the primary matched."""
    primary_key = (pairing.primary, pairing.contract.id)
    if pairing.primary == pairing.provider.id or primary_key not in samples:
        return {}
    return _primary_reference(pairing.contract, samples[primary_key])


def _primary_reference(contract: Contract, samples: list[Sample]) -> dict[str, dict]:
    """Golden id → the primary's outcome, where the primary matched the golden expectation."""
    expected = {g.id: expected_outcome(contract, g) for g in contract.goldens}
    out: dict[str, dict] = {}
    for sample in samples:
        if sample.golden_id in out:
            continue
        outcome, _ = stored_outcome(contract, sample)
        if outcome is not None and not differences(contract, outcome, expected[sample.golden_id]):
            out[sample.golden_id] = outcome
    return out


def _unreached(cfg: ProviderConfig, lost: list[Sample]) -> str:
    """``could not reach 'x' at URL: DNS lookup failed (ConnectError: …)``."""
    first = lost[0]
    where = cfg.base_url + (" (the gateway)" if cfg.via else "")
    if first.refused:  # the server's own words are the reason: quoted once
        return clean(f"{cfg.id!r} at {where} answered no call: {first.unreached}",
                     one_line=True, limit=400)
    error = (first.error or "").removeprefix("not sent: ").removeprefix("failed: ")
    error = _CLASSIFIED.sub("", error.removeprefix(f"{cfg.id}: "))
    return clean(f"could not reach {cfg.id!r} at {where}: {first.unreached} ({error})",
                 one_line=True, limit=400)


def _not_reached(
    checks: tuple[ContractCheck, ...], reason: str, *, lost: int, judged: int
) -> tuple[ContractCheck, ...]:
    """The sampled checks when ``lost`` calls could not reach the provider: undecided (no
    evidence) when none did, else judged on the ``judged`` that did, saying how many did not."""
    out = []
    for check in checks:
        if check.stats is None:  # deterministic (tokenization): needs no call
            out.append(check)
        elif not judged:
            out.append(ContractCheck.build(
                check.name, "unknown", f"{UNREACHED}: {reason}",
                {"samples": 0, "unreached": lost}, [Evidence("*", reason)],
            ))
        else:
            out.append(replace(
                check, figures={**check.figures, "unreached": lost},
                summary=f"{check.summary}; {counted(lost, 'call')} that could not reach the "
                f"provider {'is' if lost == 1 else 'are'} not counted",
            ))
    return tuple(out)


def _harness_failed(
    checks: tuple[ContractCheck, ...], reason: str, count: int
) -> tuple[ContractCheck, ...]:
    """The sampled checks undecided because our own code failed (``count`` times): not the
    provider's. ``checks`` empty (judging itself failed): every check is undecided."""
    failed = {
        name: ContractCheck.build(
            name, "unknown", f"{HARNESS_ERROR}: {reason}",
            {"harness_errors": count}, [Evidence("*", reason)],
        )
        for name in (SAMPLED_CHECKS if checks else ALL_CHECKS)
    }
    if not checks:
        return tuple(failed.values())
    return tuple(failed.get(c.name, c) for c in checks)
