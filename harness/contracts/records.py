"""Certification records: evidence, check results and the verdict for one (provider, contract).

Records are plain data with ``to_json`` / ``from_json``; the lock file stores a list of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from harness.domain.clock import rfc3339
from harness.providers.secrets import redact

Verdict = Literal["eligible", "ineligible"]
Mode = Literal["live", "replayed"]

EXCERPT_CHARS = 160
MAX_EVIDENCE = 12  # per check, so the committed lock file stays readable

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
        flat = self(text).replace("\r", "\\r").replace("\n", "\\n")
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One observation behind a check's result."""

    input_id: str
    reason: str
    excerpt: str = ""
    sample: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input_id, "reason": self.reason}
        if self.sample is not None:
            out["sample"] = self.sample
        if self.excerpt:
            out["excerpt"] = self.excerpt
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(data["input"], data["reason"], data.get("excerpt", ""), data.get("sample"))


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check (schema, tokenization, round_trip) on one provider for one contract."""

    name: str
    passed: bool
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    evidence_total: int = 0

    @classmethod
    def build(
        cls,
        name: str,
        passed: bool,
        summary: str,
        figures: dict[str, Any],
        evidence: list[Evidence],
    ) -> CheckResult:
        # Breadth first: one piece per input before a second piece for any input.
        seen: set[str] = set()
        firsts: list[Evidence] = []
        rest: list[Evidence] = []
        for item in evidence:
            (rest if item.input_id in seen else firsts).append(item)
            seen.add(item.input_id)
        kept = (firsts + rest)[:MAX_EVIDENCE]
        return cls(name, passed, summary, figures, tuple(kept), len(evidence))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "summary": self.summary,
            "figures": self.figures,
            "evidence": [e.to_json() for e in self.evidence],
            "evidence_total": self.evidence_total,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        evidence = tuple(Evidence.from_json(e) for e in data.get("evidence", []))
        return cls(
            data["name"], bool(data["passed"]), data.get("summary", ""), data.get("figures", {}),
            evidence, data.get("evidence_total", len(evidence)),
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
    checks: tuple[CheckResult, ...]
    config: dict[str, Any] = field(default_factory=dict)  # the non-secret settings hashed

    @property
    def key(self) -> tuple[str, str]:
        return (self.provider, self.contract)

    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def why(self) -> str:
        """One line: the first failed check's first evidence, and which other checks failed."""
        failed = self.failed_checks()
        if not failed:
            return "all checks passed"
        first = failed[0]
        reason = first.evidence[0].reason if first.evidence else first.summary
        others = ", ".join(c.name for c in failed[1:])
        return f"{first.name}: {reason}" + (f" (also failed: {others})" if others else "")

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
            "config": self.config,
            "checks": [c.to_json() for c in self.checks],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CertificationRecord:
        if data["verdict"] not in ("eligible", "ineligible"):
            raise ValueError(f"verdict must be eligible or ineligible, not {data['verdict']!r}")
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
            checks=tuple(CheckResult.from_json(c) for c in data.get("checks", [])),
            config=dict(data.get("config", {})),
        )


def _parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"time {value!r} has no time zone")
    return parsed
