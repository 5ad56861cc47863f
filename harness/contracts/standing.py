"""Where a (provider, contract) pair stands: certified, failed, missing, stale or expired.

Pure: the gate, the failover runner's eligibility and the reports all ask this one function,
so "eligible" means the same thing everywhere (DESIGN.md rule 10).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from harness.contracts.records import CertificationRecord
from harness.domain.words import counted

#: the reason of a sampled check that a harness error (an exception in our own checking code)
#: left without a judgement: not the provider's (contracts/judgement.py)
HARNESS_ERROR = "harness error, not the provider's"

#: the providers.yaml way out of an ineligible auto link (not for a gateway config)
MANUAL_ADVICE = " (or set this link to 'failover: manual' in the providers file)"


class State(StrEnum):
    """The standing of a certification. Unknown (missing, stale, expired, undecided) is not
    failed: exit 3, and failover does not use the link."""

    CERTIFIED = "certified"
    FAILED = "failed"
    UNDECIDED = "undecided"
    MISSING = "missing"
    STALE = "stale"
    EXPIRED = "expired"

    @property
    def exit_code(self) -> int:
        return {State.CERTIFIED: 0, State.FAILED: 1}.get(self, 3)


@dataclass(frozen=True, slots=True)
class Standing:
    """One pair's state, why, and the command that fixes it."""

    provider: str
    contract: str
    state: State
    why: str
    fix: str = ""
    command: str = ""  # the command that re-certifies the pair
    provenance: str = ""  # a certified fake says so: records.FAKE_PROVENANCE

    @property
    def eligible(self) -> bool:
        return self.state is State.CERTIFIED


def undecided_fix(record: CertificationRecord, command: str) -> str:
    """What decides an undecided record: more samples (``--adaptive``; once --adaptive spent
    the contract's budget, a larger budget or a provider that passes more reliably)."""
    if has_harness_error(record):
        return harness_fix(command)
    if record.unreached:
        return f"make the provider reachable (network, base_url, API key), then run: {command}"
    adaptive = command if "--adaptive" in command.split() else f"{command} --adaptive"
    if record.sampling is None or not record.sampling.adaptive:
        return f"sample until decided: {adaptive}"
    stats = [c.stats for c in record.undecided_checks() if c.stats is not None]
    more = max((s.more_samples or 0 for s in stats), default=0)
    if stats and not more:  # no practical number of samples would decide at the observed rate
        return (f"--adaptive spent the contract's budget ({record.sampling.calls} calls) and "
                "the rate sits on pass_threshold, where no number of samples would decide: make "
                "the provider pass more reliably (or lower certification.pass_threshold in the "
                f"contract), then run: {adaptive}")
    return (f"--adaptive spent the contract's budget ({record.sampling.calls} calls) undecided: "
            "raise certification.budget in the contract"
            + (f" (about {more} more samples would decide at the observed rate)" if more else "")
            + f", then run: {adaptive}")


def has_harness_error(record: CertificationRecord) -> bool:
    """Did a harness error leave this record undecided (so it is not the provider's)?"""
    return any(c.decision == "unknown" and c.summary.startswith(HARNESS_ERROR)
               for c in record.checks)


def harness_fix(command: str) -> str:
    """The fix of a record a harness error left undecided: it is our bug, not the provider's."""
    return ("this is a bug in failover-harness, not the provider's: report it (with the report "
            f"folder's results.json); certify keeps the lock file's record. Then run: {command}")


def certify_command(
    provider: str,
    contract: str,
    providers_path: str | None = None,
    contracts_dir: str | None = None,
    *,
    adaptive: bool = False,
    lock: str | None = None,
) -> str:
    """The command line that re-certifies one pair (``adaptive``: the contract's fixed plan
    cannot decide, so the command that would decide samples adaptively)."""
    parts = ["failover-harness", "certify"] + (["--adaptive"] if adaptive else [])
    if providers_path:
        parts += ["--providers", providers_path]
    if contracts_dir:
        parts += ["--contracts", contracts_dir]
    if lock:  # a lock file not beside the providers file: the fix writes the one that was read
        parts += ["--lock", lock]
    parts += ["--provider", provider, "--contract", contract]
    return shlex.join(parts)


def standing(
    *,
    provider: str,
    contract: str,
    config_hash: str,
    config: Mapping[str, Any],
    contract_hash: str,
    contract_version: str,
    record: CertificationRecord | None,
    now: datetime,
    command: str,
    contract_parts: Mapping[str, str] | None = None,
) -> Standing:
    """Judge ``record`` against the provider's current config and the contract's current hash."""
    if record is None:
        return Standing(
            provider, contract, State.MISSING,
            f"no certification of {provider!r} for contract {contract!r} in the lock file",
            f"run: {command}",
            command=command,
        )
    if record.sampling is None:
        return Standing(
            provider, contract, State.STALE,
            f"certified by failover-harness {record.harness_version or '(unknown version)'} "
            "with a point-estimate pass rate (lock_version 1), not a confidence bound",
            f"re-certify: {command}",
            command=command,
        )
    if record.config_hash != config_hash:
        changed = _changed(record.config, config)
        return Standing(
            provider, contract, State.STALE,
            f"the provider's configuration changed since it was certified"
            f"{' (' + changed + ')' if changed else ''}",
            f"re-certify at the new configuration: {command}",
            command=command,
        )
    if record.contract_hash != contract_hash:
        return Standing(
            provider, contract, State.STALE,
            "the contract changed since the certification"
            + _contract_change(record, contract_version, contract_parts or {}),
            f"re-certify against the new contract: {command}",
            command=command,
        )
    if now >= record.expires_at:
        return Standing(
            provider, contract, State.EXPIRED,
            f"the certification expired at {record.expires_at:%Y-%m-%d %H:%M} UTC",
            f"re-certify: {command}",
            command=command,
        )
    if record.verdict == "undecided":
        return Standing(
            provider, contract, State.UNDECIDED,
            f"certified undecided ({record.mode}): {record.why()}",
            undecided_fix(record, command),
            command=command,
        )
    if record.verdict != "eligible":
        return Standing(
            provider, contract, State.FAILED,
            f"certified ineligible ({record.mode}): {record.why()}",
            f"make the provider meet the contract{MANUAL_ADVICE}, then run: {command}",
            command=command,
        )
    label = f" — {record.provenance}" if record.provenance else ""
    return Standing(
        provider, contract, State.CERTIFIED,
        f"certified {record.mode} at {record.certified_at:%Y-%m-%d %H:%M} UTC, valid until "
        f"{record.expires_at:%Y-%m-%d %H:%M} UTC{label}",
        command=command,
        provenance=record.provenance,
    )


def _contract_change(
    record: CertificationRecord, contract_version: str, contract_parts: Mapping[str, str]
) -> str:
    """`` (version 1 → 2: golden/x.yaml changed)``: what changed since ``record``."""
    version = (
        f" (version {record.contract_version} → {contract_version})"
        if record.contract_version != contract_version
        else " (same version, different content)"
    )
    files = _changed_files(record.contract_parts, contract_parts)
    return f"{version[:-1]}: {files})" if files else version


def _changed_files(old: Mapping[str, str], new: Mapping[str, str], limit: int = 4) -> str:
    """``golden/de-x.yaml changed, golden/new.yaml added`` (empty when either side is unknown)."""
    if not old or not new:
        return ""
    what = [f"{name} {'added' if name not in old else 'removed' if name not in new else 'changed'}"
            for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
    more = f", and {counted(len(what) - limit, 'more file')}" if len(what) > limit else ""
    return ", ".join(what[:limit]) + more


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    if not old:
        return ""
    diffs = [
        f"{key} {old.get(key)!r} → {new.get(key)!r}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    return ", ".join(diffs)
