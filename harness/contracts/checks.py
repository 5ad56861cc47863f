"""The three checks behind a certification: schema adherence, tokenization, round trip.

Each takes what was observed (samples, rendered prompts) and returns a :class:`ContractCheck`
with figures and evidence. Schema and round trip are statistical (a pass rate judged with
confidence bounds, :mod:`harness.contracts.stats`); tokenization is deterministic. No I/O: the
exchanges were made before.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tiktoken.model

from harness.contracts.model import BusinessRejection, Contract, Golden
from harness.contracts.outputs import Judgement, differences, judge
from harness.contracts.records import ContractCheck, Evidence, Redactor
from harness.contracts.render import leftover_placeholders, render_golden
from harness.contracts.stats import RateVerdict, Rule
from harness.contracts.tokenizers import Tokenizer
from harness.domain.fingerprint import canonical_json
from harness.domain.verdicts import Promise

# Tokens a chat API adds around messages (role markers, separators): a conservative allowance.
MESSAGE_OVERHEAD_TOKENS = 16
_PART = "\x00part\x00"  # stands for "system" / "user" in reasons computed once per text


@dataclass(frozen=True, slots=True)
class Sample:
    """One exchange with a provider for one golden input: the answer, or why there was none."""

    golden_id: str
    index: int
    text: str | None = None
    parsed: Any = None
    finish_reason: str | None = None
    refusal: str | None = None
    error: str | None = None  # "unknown: read timeout …" / "failed: HTTP 429 …"
    latency_s: float = 0.0
    input_tokens: int | None = None  # the provider's own count of the prompt (reply usage)
    # What the failover runner made of it: the job result it claimed into the store, or why not.
    stored: dict[str, Any] | None = None
    runner: str = ""
    # Why the call cannot have reached a model (DNS, connect, TLS, a refused key, no such
    # endpoint), else "": such a sample is no evidence about the contract and is not judged.
    unreached: str = ""
    # An exception in our own code while processing the answer ("harness error while …"), else
    # "": not the provider's failure, so the sample is not judged (see contracts/judgement.py).
    harness_error: str = ""
    # The call was refused before any answer ("HTTP 400: <what the server said>"), else "":
    # judged as a failed call, unless every call was refused (judgement.py: no evidence).
    refused: str = ""

    def judge(self, contract: Contract) -> Judgement:
        if self.error is not None:
            return Judgement("call_failed", f"the call failed ({self.error})")
        return judge(
            contract, self.text, parsed=self.parsed, finish_reason=self.finish_reason,
            refusal=self.refusal,
        )

    @property
    def shown(self) -> str | None:
        return self.text if self.text is not None else (
            None if self.parsed is None else canonical_json(self.parsed).decode()
        )


def schema_check(
    contract: Contract,
    *,
    temperature: float,
    samples: Sequence[Sample],
    judgements: Sequence[Judgement],
    redact: Redactor,
    measured: bool = True,
    rule: Rule = "clopper-pearson",
) -> ContractCheck:
    """Temperature ≤ max_temperature; every sample strict JSON, no extra keys, schema, business.

    The pass rate is judged by ``rule`` at the contract's confidence: pass when its lower
    bound meets the threshold, fail when its upper bound is below it, else undecided.
    """
    limit = contract.thresholds
    evidence: list[Evidence] = []
    temperature_ok = temperature <= limit.max_temperature
    if not temperature_ok:
        evidence.append(Evidence(
            "*", f"temperature {temperature:g} exceeds the contract's max_temperature "
            f"{limit.max_temperature:g}",
        ))
    failures: Counter[str] = Counter()
    for sample, verdict in zip(samples, judgements, strict=True):
        if not verdict.ok:
            failures[verdict.failure or "?"] += 1
            evidence.append(Evidence(
                sample.golden_id, verdict.reason or "", redact.excerpt(sample.shown), sample.index
            ))
    total = len(samples)
    passed_n = total - sum(failures.values())
    stats = RateVerdict.judge(passed_n, total, limit.pass_threshold, limit.confidence, rule)
    decision: Promise = stats.decision if temperature_ok else "broken"
    latencies = [s.latency_s for s in samples if s.error is None] if measured else []
    figures = {
        "samples": total,
        "passed": passed_n,
        "pass_rate": round(stats.rate, 4),
        "pass_threshold": limit.pass_threshold,
        "temperature": temperature,
        "max_temperature": limit.max_temperature,
        "failures": dict(sorted(failures.items())),
        "pass_k": pass_k(samples, [j.ok for j in judgements]),
        "latency_p50_s": round(statistics.median(latencies), 4) if latencies else None,
    }
    summary = f"adherence {stats.describe()}" + (
        "" if temperature_ok else f"; temperature {temperature:g} > {limit.max_temperature:g}"
    )
    return ContractCheck.build("schema", decision, summary, figures, evidence, stats)


def pass_k(samples: Sequence[Sample], ok: Sequence[bool]) -> dict[str, Any]:
    """pass^k: the share of golden inputs whose every one of their k samples passed."""
    by_input: dict[str, list[bool]] = {}
    for sample, good in zip(samples, ok, strict=True):
        by_input.setdefault(sample.golden_id, []).append(good)
    k = min((len(v) for v in by_input.values()), default=0)
    all_pass = sum(1 for v in by_input.values() if all(v))
    inputs = len(by_input)
    return {
        "k": k, "inputs": inputs, "all_pass": all_pass,
        "rate": round(all_pass / inputs, 4) if inputs else 0.0,
    }


def tokenizer_fidelity(kind: str, model: str, spec: str) -> tuple[bool, str]:
    """``(exact, wording)``: whether ``spec`` is the provider's own tokenizer, said honestly."""
    scheme, _, name = spec.partition(":")
    if scheme == "hf":
        return False, (
            f"{spec} (a local tokenizer.json as configured; whether it is the provider's own "
            "cannot be verified offline)"
        )
    if kind == "anthropic-messages":
        return False, f"{name}, an approximation (Anthropic's tokenizer is not public)"
    if kind == "openai-chat" and scheme == "tiktoken":
        try:
            own = tiktoken.model.encoding_name_for_model(model)
        except KeyError:
            return False, f"{name}, an approximation (tiktoken does not know model {model!r})"
        if own == name:
            return True, f"{name}, the model's own encoding"
        return False, f"{name}, an approximation ({model!r} uses {own})"
    return False, f"{spec}, an approximation"


# Approximate token counts are inflated by this factor before the context-window fit, so an
# approximation errs towards "does not fit" (Claude's tokenizer, for one, yields more tokens
# than cl100k_base for the same text).
APPROXIMATION_MARGIN = 1.25


def tokenization_check(
    contract: Contract,
    *,
    tokenizer: Tokenizer,
    context_window: int,
    max_output_tokens: int,
    kind: str,
    model: str,
    redact: Redactor,
    counted: Mapping[str, int] | None = None,
) -> ContractCheck:
    """Render every golden input; lossless, no special-token text, and it fits the window.

    Deterministic: pass or fail, no sampling. ``counted`` (golden id → prompt tokens) holds the
    provider's own counts, read from the usage of its replies during the certification: where
    there is one, the fit uses it, exactly. Elsewhere, where the tokenizer is only an
    approximation of the provider's (see :func:`tokenizer_fidelity`), the counts are inflated by
    :data:`APPROXIMATION_MARGIN` before the fit, and the summary says so.
    """
    evidence: list[Evidence] = []
    counted = counted or {}
    exact, wording = tokenizer_fidelity(kind, model, tokenizer.spec)
    if counted and all(g.id in counted for g in contract.goldens):
        exact, wording = True, (
            f"the provider's own counts (the usage of its replies; {wording} for the lossless "
            "and special-token checks)"
        )
    margin = 1.0 if exact else APPROXIMATION_MARGIN
    # Each distinct text is inspected once (the system prompt is usually shared by all inputs):
    # text -> (tokens, problems as (reason, excerpt) with _PART where "system"/"user" goes).
    seen: dict[str, tuple[int, list[tuple[str, str]]]] = {}
    base = tokenizer.count(_schema_text(contract)) + MESSAGE_OVERHEAD_TOKENS
    prompt_tokens: list[int] = []
    for golden in contract.goldens:
        rendered = render_golden(contract, golden)
        if rendered.error:
            evidence.append(Evidence(golden.id, rendered.error))
            continue
        total = base
        for part, text in (("system", rendered.system), ("user", rendered.user)):
            known = seen.get(text)
            if known is None:
                known = seen[text] = _inspect(text, golden.input, tokenizer, redact)
            total += known[0]
            for reason, excerpt in known[1]:
                evidence.append(Evidence(golden.id, reason.replace(_PART, part), excerpt))
        own = counted.get(golden.id)
        if own is not None:
            total = own
        prompt_tokens.append(total)
        budgeted = total if own is not None else math.ceil(total * margin)
        if budgeted + max_output_tokens > context_window:
            how = f"prompt {total} tokens" + (
                " (counted by the provider)" if own is not None
                else "" if exact else f" (×{margin:g} for an approximate count: {budgeted})"
            )
            evidence.append(Evidence(
                golden.id, f"{how} + max_output_tokens {max_output_tokens} > "
                f"context_window {context_window}",
            ))
    figures = _tokenization_figures(
        contract, tokenizer, exact=exact, wording=wording, margin=margin, counted=counted,
        prompt_tokens=prompt_tokens, max_output_tokens=max_output_tokens,
        context_window=context_window,
    )
    passed = not evidence
    fit = math.ceil(max(prompt_tokens, default=0) * margin)
    summary = (
        f"{len(contract.goldens)} inputs render, round-trip losslessly and fit through "
        f"{wording} (max {fit}{'' if exact else ' with the margin'} + {max_output_tokens} "
        f"≤ {context_window})"
        if passed
        else f"{len(evidence)} problem{'' if len(evidence) == 1 else 's'}: "
        f"{evidence[0].reason} (tokenizer: {wording})"
    )
    return ContractCheck.build("tokenization", passed, summary, figures, evidence)


def _tokenization_figures(
    contract: Contract, tokenizer: Tokenizer, *, exact: bool, wording: str, margin: float,
    counted: Mapping[str, int], prompt_tokens: list[int], max_output_tokens: int,
    context_window: int,
) -> dict[str, Any]:
    """The tokenization check's figures: the tokenizer, how exact, and the prompt sizes."""
    return {
        "tokenizer": tokenizer.spec,
        "tokenizer_exact": exact,
        "tokenizer_note": wording,
        "count_margin": margin,
        "counted_by_provider": sum(1 for g in contract.goldens if g.id in counted),
        "inputs": len(contract.goldens),
        "max_prompt_tokens": max(prompt_tokens, default=0),
        "mean_prompt_tokens": (
            round(sum(prompt_tokens) / len(prompt_tokens), 1) if prompt_tokens else 0
        ),
        "max_output_tokens": max_output_tokens,
        "context_window": context_window,
    }


def _inspect(
    text: str, values: Mapping[str, Any], tokenizer: Tokenizer, redact: Redactor
) -> tuple[int, list[tuple[str, str]]]:
    """Tokens of one rendered text, and its problems (``_PART`` stands for its name)."""
    problems = [
        (f"unrendered placeholder {p!r} in the {_PART} prompt", "")
        for p in leftover_placeholders(text, values)
    ]
    report = tokenizer.inspect(text)
    for token in report.special:
        problems.append((
            f"special-token text {token!r} in the rendered {_PART} prompt ({tokenizer.spec} "
            "refuses it by default; input must not carry control tokens)",
            redact.excerpt(_around(text, token)),
        ))
    if not report.lossless:
        problems.append((
            f"encode → decode through {tokenizer.spec} is lossy for the {_PART} prompt",
            redact.excerpt(_first_difference(text, report.decoded)),
        ))
    return report.tokens, problems


def stored_outcome(contract: Contract, sample: Sample) -> tuple[dict[str, Any] | None, str]:
    """The business outcome of the result the failover runner stored, or why there is none."""
    if sample.stored is None:
        return None, f"the failover runner stored no result ({sample.runner})"
    try:
        return contract.business.outcome(sample.stored), ""
    except BusinessRejection as exc:
        return None, f"the business code rejects the stored result: {exc}"


def round_trip_outcomes(
    contract: Contract,
    *,
    samples: Sequence[Sample],
    primary: str | None,
    primary_outcomes: Mapping[str, dict[str, Any]],
) -> list[tuple[bool, str, bool | None]]:
    """Per sample: ``(agrees, why not, agrees with the primary or None when not compared)``."""
    expected = {g.id: expected_outcome(contract, g) for g in contract.goldens}
    out: list[tuple[bool, str, bool | None]] = []
    for sample in samples:
        outcome, why_not = stored_outcome(contract, sample)
        if outcome is None:
            out.append((False, why_not, None))
            continue
        problems = []
        diffs = differences(contract, outcome, expected[sample.golden_id])
        if diffs:
            problems.append("differs from the golden expectation: " + "; ".join(diffs))
        reference = primary_outcomes.get(sample.golden_id)
        with_primary: bool | None = None
        if reference is not None:
            pdiffs = differences(contract, outcome, reference)
            with_primary = not pdiffs
            if pdiffs:
                problems.append(f"differs from the primary {primary!r}: " + "; ".join(pdiffs))
        out.append((not problems, " | ".join(problems), with_primary))
    return out


def round_trip_check(
    contract: Contract,
    *,
    samples: Sequence[Sample],
    primary: str | None,
    primary_outcomes: Mapping[str, dict[str, Any]],
    redact: Redactor,
    rule: Rule = "clopper-pearson",
    outcomes: Sequence[tuple[bool, str, bool | None]] | None = None,
) -> ContractCheck:
    """The runner's stored result → business function → vs golden expectation and primary.

    ``primary_outcomes`` maps golden id → the primary's outcome, only for inputs where the
    primary itself agreed with the golden expectation (a wrong primary is not a reference).
    The agreement rate is judged by ``rule`` like the schema check's.
    """
    if outcomes is None:
        outcomes = round_trip_outcomes(
            contract, samples=samples, primary=primary, primary_outcomes=primary_outcomes
        )
    evidence = [
        Evidence(sample.golden_id, why, redact.excerpt(sample.shown), sample.index)
        for sample, (ok, why, _) in zip(samples, outcomes, strict=True)
        if not ok
    ]
    agree_golden = sum(1 for ok, _, _ in outcomes if ok)
    compared_primary = sum(1 for _, _, p in outcomes if p is not None)
    agree_primary = sum(1 for _, _, p in outcomes if p)
    total = len(samples)
    limit = contract.thresholds
    stats = RateVerdict.judge(agree_golden, total, limit.pass_threshold, limit.confidence, rule)
    figures = {
        "samples": total,
        "stored_by_runner": sum(1 for s in samples if s.stored is not None),
        "agree": agree_golden,
        "agree_rate": round(stats.rate, 4),
        "pass_threshold": limit.pass_threshold,
        "primary": primary,
        "compared_with_primary": compared_primary,
        "agree_with_primary": agree_primary,
        "pass_k": pass_k(samples, [ok for ok, _, _ in outcomes]),
    }
    against = f" and the primary {primary!r}" if primary else ""
    summary = (
        f"results stored by the failover runner that match the golden expectation{against}: "
        f"{stats.describe()}"
    )
    return ContractCheck.build("round_trip", stats.decision, summary, figures, evidence, stats)


_schema_texts: dict[str, tuple[Mapping[str, Any], str]] = {}


def _schema_text(contract: Contract) -> str:
    """The schema as the provider receives it, in canonical JSON (memoised per contract)."""
    found = _schema_texts.get(contract.hash)
    if found is None or found[0] is not contract.schema:
        found = _schema_texts[contract.hash] = (
            contract.schema, canonical_json(contract.schema).decode()
        )
    return found[1]


def expected_outcome(contract: Contract, golden: Golden) -> dict[str, Any]:
    """The business outcome of a golden case's expected output (validated at load time)."""
    try:
        return contract.business.outcome(golden.expected)
    except BusinessRejection as exc:  # the loader checks this; keep the reason if it slips
        raise ValueError(f"golden {golden.id}: expected output rejected: {exc}") from None


def _around(text: str, needle: str, width: int = 60) -> str:
    at = text.find(needle)
    return text[max(0, at - width) : at + len(needle) + width]


def _first_difference(a: str, b: str) -> str:
    pairs = enumerate(zip(a, b, strict=False))
    at = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
    return f"{a[max(0, at - 30): at + 30]!r} became {b[max(0, at - 30): at + 30]!r}"
