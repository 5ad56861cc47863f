"""Certification records: evidence, check results and the verdict for one (provider, contract).

Records are plain data with ``to_json`` / ``from_json``; the lock file stores a list of them.
A verdict has three states: ``eligible`` (every check passed: the statistical ones with their
lower confidence bound at or above the threshold), ``ineligible`` (a check failed: a
deterministic one, or a rate whose upper bound is below the threshold) and ``undecided`` (no
check failed but a rate's bounds straddle the threshold: unknown, exit 3).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from harness.console import clean
from harness.contracts.events import Evidence
from harness.contracts.stats import RateVerdict
from harness.domain.clock import rfc3339
from harness.domain.published import from_word
from harness.domain.redaction import longest_secret
from harness.domain.verdicts import DECISION_WORD, ELIGIBILITIES, Eligibility, Promise
from harness.providers.secrets import redact

Verdict = Eligibility  # one vocabulary: harness.domain.verdicts
VERDICTS: tuple[Verdict, ...] = ELIGIBILITIES
Mode = Literal["live", "replayed"]
FAKE_PROVENANCE = "fake provider (answers from the golden file)"

EXCERPT_CHARS = 160
REASON_CHARS = 300
MAX_EVIDENCE = 12  # per check, so the committed lock file stays readable
# the least margin kept after an excerpt's window when only a prefix is redacted: longer than a
# key-looking token cut before its 8th character ("bearer" and any spaces, "sk-" + 7)
HEAD_MARGIN = 64

_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)(api[_-]?key\"?\s*[:=]\s*\"?)[A-Za-z0-9._\-]{8,}"),
)


class Redactor:
    """Removes secrets (the configured API keys' values, key-looking strings) from text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    @classmethod
    def from_env(cls, env_names: Iterable[str]) -> Redactor:
        return cls(os.environ.get(name, "") for name in env_names)

    def __call__(self, text: str) -> str:
        text = redact(text)  # every key the provider layer read from the environment
        for secret in self.secrets:
            text = text.replace(secret, "[REDACTED]")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(
                lambda m: (m.group(1) if m.groups() else "") + "[REDACTED]", text
            )
        return text

    def excerpt(self, text: str | None, limit: int = EXCERPT_CHARS) -> str:
        """A redacted, single-line, shortened view of ``text`` for evidence."""
        if text is None:
            return ""
        # One line, no terminal escapes, no lone surrogates: an excerpt is printed and rendered.
        flat = clean(self.redacted_head(text, limit * 4), one_line=True)
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"

    def redacted_head(self, text: str, size: int) -> str:
        """The first ``size`` characters of ``text`` redacted, without redacting all of a long
        text (a megabyte answer shown as 160 characters): a prefix is redacted, and kept when
        its redaction is longer than ``size`` by more than any secret can be long. A secret
        the prefix cut in two is then left partly unredacted only after those ``size``
        characters (a secret's rest, or a key-looking token's first characters, is shorter
        than that margin); else the whole text is redacted."""
        margin = max(HEAD_MARGIN, longest_secret(), *(len(s) for s in self.secrets))
        cut = 4 * (size + margin)
        if len(text) > cut:
            head = self(text[:cut])
            if len(head) >= size + margin:
                return head[:size]
        return self(text)[:size]


#: the reason of a sampled check none of whose samples reached a model (see certifier)
UNREACHED = "no sample reached the provider, so nothing about the contract was observed"


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """One check (schema, tokenization, round_trip) on one provider for one contract.

    ``decision`` is held, broken or unknown (the lock file's pass, fail or undecided:
    :data:`~harness.domain.verdicts.DECISION_WORD`); a statistical check carries its ``stats`` (the
    rate, the bounds and the rule), a deterministic one (tokenization, the temperature) none.
    """

    name: str
    decision: Promise
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    evidence_total: int = 0
    stats: RateVerdict | None = None

    @property
    def passed(self) -> bool:
        return self.decision == "held"

    @classmethod
    def build(
        cls,
        name: str,
        decision: Promise | bool,
        summary: str,
        figures: dict[str, Any],
        evidence: list[Evidence],
        stats: RateVerdict | None = None,
    ) -> ContractCheck:
        if isinstance(decision, bool):
            decision = "held" if decision else "broken"
        # Breadth first: one piece per input before a second piece for any input.
        seen: set[str] = set()
        firsts: list[Evidence] = []
        rest: list[Evidence] = []
        for item in evidence:
            (rest if item.input_id in seen else firsts).append(item)
            seen.add(item.input_id)
        kept = tuple(_printable(e) for e in (firsts + rest)[:MAX_EVIDENCE])
        return cls(name, decision, clean(summary, one_line=True, limit=REASON_CHARS * 2),
                   figures, kept, len(evidence), stats)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "decision": DECISION_WORD[self.decision],
            "passed": self.passed,
            "summary": self.summary,
        }
        if self.stats is not None:
            out["stats"] = self.stats.to_json()
        out.update(
            figures=self.figures,
            evidence=[e.to_json() for e in self.evidence],
            evidence_total=self.evidence_total,
        )
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContractCheck:
        evidence = tuple(Evidence.from_json(e) for e in data.get("evidence", []))
        word = data.get("decision") or ("pass" if data["passed"] else "fail")
        decision = from_word(DECISION_WORD, word)
        if decision not in ("held", "broken", "unknown"):
            raise ValueError(f"decision must be pass, fail or undecided, not {word!r}")
        stats = RateVerdict.from_json(data["stats"]) if data.get("stats") else None
        return cls(
            data["name"], decision, data.get("summary", ""), data.get("figures", {}),
            evidence, data.get("evidence_total", len(evidence)), stats,
        )


def _printable(item: Evidence) -> Evidence:
    """Evidence as it may be stored and printed: one line, no escapes, reasons of bounded size
    (a reason can quote the answer: a JSON Schema message repeats a 1 MB value)."""
    return Evidence(
        clean(item.input_id, one_line=True, limit=REASON_CHARS),
        clean(item.reason, one_line=True, limit=REASON_CHARS),
        clean(item.excerpt, one_line=True, limit=EXCERPT_CHARS * 2),
        item.sample,
    )


@dataclass(frozen=True, slots=True)
class InputTally:
    """One golden input's samples: how many, how many passed each check, and how they failed."""

    samples: int
    passed: dict[str, int]  # check name -> samples that passed it
    failures: tuple[str, ...] = ()  # distinct short reasons, at most MAX_INPUT_FAILURES

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"samples": self.samples, **self.passed}
        if self.failures:
            out["failures"] = list(self.failures)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InputTally:
        passed = {k: int(v) for k, v in data.items() if k not in ("samples", "failures")}
        return cls(int(data["samples"]), passed, tuple(data.get("failures", ())))


MAX_INPUT_FAILURES = 3


@dataclass(frozen=True, slots=True)
class Sampling:
    """How the evidence was gathered: the rule, its confidence, samples per input, rounds."""

    rule: str  # "clopper-pearson" (fixed) or "mixture-sprt" (--adaptive)
    confidence: float
    k: int  # samples per golden input (every input gets the same number: balanced rounds)
    rounds: int
    calls: int
    adaptive: bool = False
    budget: int | None = None  # samples --adaptive may spend per provider
    seeded: bool = False  # a per-sample seed was sent (the API takes one)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "confidence": self.confidence, "k": self.k,
            "rounds": self.rounds, "calls": self.calls, "adaptive": self.adaptive,
            "budget": self.budget, "seeded": self.seeded,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sampling:
        return cls(
            str(data["rule"]), float(data["confidence"]), int(data["k"]), int(data["rounds"]),
            int(data["calls"]), bool(data.get("adaptive", False)), data.get("budget"),
            bool(data.get("seeded", False)),
        )


@dataclass(frozen=True, slots=True)
class CertificationRecord:
    """The verdict, with evidence, that a provider meets (or not) a contract, at exact hashes."""

    provider: str
    contract: str
    contract_version: str
    model: str
    kind: str
    config_hash: str
    contract_hash: str
    verdict: Verdict
    mode: Mode
    harness_version: str
    certified_at: datetime
    expires_at: datetime
    checks: tuple[ContractCheck, ...]
    config: dict[str, Any] = field(default_factory=dict)  # the non-secret settings hashed
    sampling: Sampling | None = None  # None: a lock_version 1 record (point-estimate rule)
    inputs: dict[str, InputTally] = field(default_factory=dict)  # per golden input
    drift: dict[str, Any] | None = None  # vs the previous certification (see drift.py)
    provenance: str = ""  # FAKE_PROVENANCE for fake:// providers, else ""
    contract_parts: dict[str, str] = field(default_factory=dict)  # file -> short hash
    # Why no call reached the provider ("could not reach …"), else "". Such a record holds no
    # evidence about the contract: undecided, and certify never lets it replace an earlier
    # record in the lock file (it is written only where the lock had none for the pair).
    unreached: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.provider, self.contract)

    @property
    def fake(self) -> bool:
        return bool(self.provenance)

    def failed_checks(self) -> list[ContractCheck]:
        return [c for c in self.checks if c.decision == "broken"]

    def undecided_checks(self) -> list[ContractCheck]:
        return [c for c in self.checks if c.decision == "unknown"]

    def why(self) -> str:
        """One line: the first failed (else undecided) check's reason, and which others."""
        failed = self.failed_checks()
        undecided = self.undecided_checks()
        label = f" — {self.provenance}" if self.provenance else ""
        if not failed and not undecided:
            return "all checks passed" + label
        if self.unreached and not failed:
            return f"{UNREACHED}: {self.unreached}{label}"
        if failed:
            first = failed[0]
            reason = first.evidence[0].reason if first.evidence else first.summary
            others = ", ".join(c.name for c in failed[1:])
            also = f" (also failed: {others})" if others else ""
        else:
            first = undecided[0]
            reason = "undecided: " + (
                first.stats.describe() if first.stats is not None else first.summary
            )
            others = ", ".join(c.name for c in undecided[1:])
            also = f" (also undecided: {others})" if others else ""
        return f"{first.name}: {reason}{also}{label}"

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "contract": self.contract,
            "contract_version": self.contract_version,
            "model": self.model,
            "kind": self.kind,
            "config_hash": self.config_hash,
            "contract_hash": self.contract_hash,
            "verdict": self.verdict,
            "mode": self.mode,
            "harness_version": self.harness_version,
            "certified_at": rfc3339(self.certified_at),
            "expires_at": rfc3339(self.expires_at),
            "provenance": self.provenance or None,
            "config": self.config,
            "sampling": self.sampling.to_json() if self.sampling else None,
            "checks": [c.to_json() for c in self.checks],
            "inputs": {k: self.inputs[k].to_json() for k in sorted(self.inputs)},
            "drift": self.drift,
            **({"contract_parts": self.contract_parts} if self.contract_parts else {}),
            **({"unreached": self.unreached} if self.unreached else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CertificationRecord:
        if data["verdict"] not in VERDICTS:
            raise ValueError(
                f"verdict must be one of {', '.join(VERDICTS)}, not {data['verdict']!r}"
            )
        if data["mode"] not in ("live", "replayed"):
            raise ValueError(f"mode must be live or replayed, not {data['mode']!r}")
        return cls(
            provider=data["provider"],
            contract=data["contract"],
            contract_version=str(data.get("contract_version", "")),
            model=data.get("model", ""),
            kind=data.get("kind", ""),
            config_hash=data["config_hash"],
            contract_hash=data["contract_hash"],
            verdict=data["verdict"],
            mode=data["mode"],
            harness_version=data.get("harness_version", ""),
            certified_at=_parse_time(data["certified_at"]),
            expires_at=_parse_time(data["expires_at"]),
            checks=tuple(ContractCheck.from_json(c) for c in data.get("checks", [])),
            config=dict(data.get("config", {})),
            sampling=Sampling.from_json(data["sampling"]) if data.get("sampling") else None,
            inputs={k: InputTally.from_json(v) for k, v in (data.get("inputs") or {}).items()},
            drift=data.get("drift") or None,
            provenance=data.get("provenance") or "",
            unreached=str(data.get("unreached") or ""),
            contract_parts={str(k): str(v) for k, v in (data.get("contract_parts") or {}).items()},
        )


def _parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"time {value!r} has no time zone")
    return parsed
