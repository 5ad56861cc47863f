"""The three checks behind a certification: schema adherence, tokenization, round trip.

Each takes what was observed (samples, rendered prompts, a request body) and returns a
:class:`CheckResult` with figures and evidence. No I/O: the exchanges were made before.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contracts.model import BusinessRejection, Contract, Golden
from harness.contracts.outputs import Judgement, differences, judge
from harness.contracts.records import CheckResult, Evidence, Redactor
from harness.contracts.render import leftover_placeholders, render_golden
from harness.contracts.tokenizers import Tokenizer
from harness.domain.fingerprint import canonical_json

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
    # What the failover runner made of it: the job result it claimed into the store, or why not.
    stored: dict[str, Any] | None = None
    runner: str = ""

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
) -> CheckResult:
    """Temperature ≤ max_temperature; every sample strict JSON, no extra keys, schema, business."""
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
    rate = passed_n / total if total else 0.0
    passed = temperature_ok and total > 0 and rate >= limit.pass_threshold
    latencies = [s.latency_s for s in samples if s.error is None] if measured else []
    figures = {
        "samples": total,
        "passed": passed_n,
        "pass_rate": round(rate, 4),
        "pass_threshold": limit.pass_threshold,
        "temperature": temperature,
        "max_temperature": limit.max_temperature,
        "failures": dict(sorted(failures.items())),
        "latency_p50_s": round(statistics.median(latencies), 4) if latencies else None,
    }
    summary = (
        f"{passed_n}/{total} samples adhere ({rate:.0%}, threshold {limit.pass_threshold:.0%})"
        + ("" if temperature_ok else f"; temperature {temperature:g} > {limit.max_temperature:g}")
    )
    return CheckResult.build("schema", passed, summary, figures, evidence)


def tokenization_check(
    contract: Contract,
    *,
    tokenizer: Tokenizer,
    context_window: int,
    max_output_tokens: int,
    kind: str,
    build_body: Callable[[str, str], Mapping[str, Any]],
    redact: Redactor,
) -> CheckResult:
    """Render every golden input; lossless, no special-token text, fits, system prompt placed right.

    ``build_body(system, user)`` returns the request body the provider's client would send.
    """
    evidence: list[Evidence] = []
    # Each distinct text is inspected once (the system prompt is usually shared by all inputs):
    # text -> (tokens, problems as (reason, excerpt) with _PART where "system"/"user" goes).
    seen: dict[str, tuple[int, list[tuple[str, str]]]] = {}
    base = tokenizer.count(_schema_text(contract)) + MESSAGE_OVERHEAD_TOKENS
    prompt_tokens: list[int] = []
    first_rendered: tuple[str, str] | None = None
    for golden in contract.goldens:
        rendered = render_golden(contract, golden)
        if rendered.error:
            evidence.append(Evidence(golden.id, rendered.error))
            continue
        if first_rendered is None:
            first_rendered = (rendered.system, rendered.user)
        total = base
        for part, text in (("system", rendered.system), ("user", rendered.user)):
            known = seen.get(text)
            if known is None:
                known = seen[text] = _inspect(text, golden.input, tokenizer, redact)
            total += known[0]
            for reason, excerpt in known[1]:
                evidence.append(Evidence(golden.id, reason.replace(_PART, part), excerpt))
        prompt_tokens.append(total)
        if total + max_output_tokens > context_window:
            evidence.append(Evidence(
                golden.id, f"prompt {total} tokens + max_output_tokens {max_output_tokens} > "
                f"context_window {context_window}",
            ))
    placement = None
    if first_rendered is not None:
        placement = system_placement_problem(kind, build_body(*first_rendered), *first_rendered)
        if placement:
            evidence.append(Evidence(contract.goldens[0].id, placement))
    figures = {
        "tokenizer": tokenizer.spec,
        "inputs": len(contract.goldens),
        "max_prompt_tokens": max(prompt_tokens, default=0),
        "mean_prompt_tokens": (
            round(sum(prompt_tokens) / len(prompt_tokens), 1) if prompt_tokens else 0
        ),
        "max_output_tokens": max_output_tokens,
        "context_window": context_window,
        "system_prompt_placement": "ok" if placement is None else "wrong",
    }
    passed = not evidence
    summary = (
        f"{len(contract.goldens)} inputs render, round-trip losslessly through {tokenizer.spec} "
        f"and fit (max {figures['max_prompt_tokens']} + {max_output_tokens} ≤ {context_window})"
        if passed
        else f"{len(evidence)} problem(s): {evidence[0].reason}"
    )
    return CheckResult.build("tokenization", passed, summary, figures, evidence)


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


def system_placement_problem(
    kind: str, body: Mapping[str, Any], system: str, user: str
) -> str | None:
    """``None`` when the body carries the system prompt where ``kind`` expects it, else why not."""
    messages = body.get("messages") or []
    if kind == "openai-chat":
        first = messages[0] if messages else {}
        placed = first.get("role") in ("system", "developer")
        if not placed or _text(first.get("content")) != system:
            return "openai-chat request: the system prompt is not the first message (role system)"
        if any(m.get("role") == "user" and system in _text(m.get("content")) for m in messages):
            return "openai-chat request: the system prompt was sent inside a user message"
    elif kind == "anthropic-messages":
        if _text(body.get("system")) != system:
            return "anthropic-messages request: the system prompt is not in the top-level 'system'"
        if any(m.get("role") == "system" for m in messages):
            return "anthropic-messages request: a message has role 'system', which the API rejects"
    else:
        return f"unknown provider kind {kind!r}"
    if not any(m.get("role") == "user" and user in _text(m.get("content")) for m in messages):
        return f"{kind} request: the user prompt is not in a user message"
    return None


def stored_outcome(contract: Contract, sample: Sample) -> tuple[dict[str, Any] | None, str]:
    """The business outcome of the result the failover runner stored, or why there is none."""
    if sample.stored is None:
        return None, f"the failover runner stored no result ({sample.runner})"
    try:
        return contract.business.outcome(sample.stored), ""
    except BusinessRejection as exc:
        return None, f"the business code rejects the stored result: {exc}"


def round_trip_check(
    contract: Contract,
    *,
    samples: Sequence[Sample],
    primary: str | None,
    primary_outcomes: Mapping[str, dict[str, Any]],
    redact: Redactor,
) -> CheckResult:
    """The runner's stored result → business function → vs golden expectation and primary.

    ``primary_outcomes`` maps golden id → the primary's outcome, only for inputs where the
    primary itself agreed with the golden expectation (a wrong primary is not a reference).
    """
    expected = {g.id: expected_outcome(contract, g) for g in contract.goldens}
    evidence: list[Evidence] = []
    agree_golden = agree_primary = compared_primary = stored_n = 0
    for sample in samples:
        stored_n += sample.stored is not None
        outcome, why_not = stored_outcome(contract, sample)
        if outcome is None:
            evidence.append(Evidence(
                sample.golden_id, why_not, redact.excerpt(sample.shown), sample.index
            ))
            continue
        problems = []
        diffs = differences(contract, outcome, expected[sample.golden_id])
        if diffs:
            problems.append("differs from the golden expectation: " + "; ".join(diffs))
        reference = primary_outcomes.get(sample.golden_id)
        if reference is not None:
            compared_primary += 1
            pdiffs = differences(contract, outcome, reference)
            if pdiffs:
                problems.append(f"differs from the primary {primary!r}: " + "; ".join(pdiffs))
            else:
                agree_primary += 1
        if problems:
            evidence.append(Evidence(
                sample.golden_id, " | ".join(problems), redact.excerpt(sample.shown), sample.index
            ))
        else:
            agree_golden += 1
    total = len(samples)
    rate = agree_golden / total if total else 0.0
    passed = total > 0 and rate >= contract.thresholds.pass_threshold
    figures = {
        "samples": total,
        "stored_by_runner": stored_n,
        "agree": agree_golden,
        "agree_rate": round(rate, 4),
        "pass_threshold": contract.thresholds.pass_threshold,
        "primary": primary,
        "compared_with_primary": compared_primary,
        "agree_with_primary": agree_primary,
    }
    against = f" and the primary {primary!r}" if primary else ""
    summary = (
        f"{agree_golden}/{total} results stored by the failover runner match the golden "
        f"expectation{against} ({rate:.0%})"
    )
    return CheckResult.build("round_trip", passed, summary, figures, evidence)


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


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _around(text: str, needle: str, width: int = 60) -> str:
    at = text.find(needle)
    return text[max(0, at - width) : at + len(needle) + width]


def _first_difference(a: str, b: str) -> str:
    pairs = enumerate(zip(a, b, strict=False))
    at = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
    return f"{a[max(0, at - 30): at + 30]!r} became {b[max(0, at - 30): at + 30]!r}"
