"""The failover runner's eligibility, read from ``providers.lock.json`` (DESIGN.md rule 10).

``LockFileEligibility.is_eligible(provider_id, contract_id)`` answers ``(True, why)`` only when
the lock file holds an ``eligible`` certification of that provider for that contract, at the
provider's current configuration hash and the contract's current hash, and not expired. The
gate asks the same :func:`harness.contracts.standing.standing`, so both always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from harness.contracts.decidable import plan_check
from harness.contracts.lockfile import LockFile, lock_path_for, read_lock
from harness.contracts.model import Contract
from harness.contracts.standing import Standing, State, certify_command, standing
from harness.domain.clock import Clock, SystemClock
from harness.providers.config import ProvidersFile


class LockFileEligibility:
    """Eligibility of (provider, contract) pairs from certification records."""

    def __init__(
        self,
        providers: ProvidersFile,
        contracts: Mapping[str, Contract],
        lock: LockFile,
        *,
        clock: Clock | None = None,
        providers_path: str | None = None,
        contracts_dir: str | None = None,
    ) -> None:
        """``contracts_dir``: given when the contracts are not beside the providers file, so
        every fix command names them (and the lock file, when it is not the default one)."""
        self.providers = providers
        self.contracts = contracts
        self.lock = lock
        self.clock = clock or SystemClock()
        self.providers_path = providers_path
        self.contracts_dir = contracts_dir

    @classmethod
    def from_files(
        cls,
        providers_path: Path,
        contracts: Mapping[str, Contract],
        providers: ProvidersFile,
        *,
        lock_path: Path | None = None,
        clock: Clock | None = None,
    ) -> LockFileEligibility:
        lock = read_lock(lock_path or lock_path_for(providers_path))
        return cls(providers, contracts, lock, clock=clock, providers_path=str(providers_path))

    def reload(self) -> None:
        """Read the lock file again (after a certify run)."""
        self.lock = read_lock(self.lock.path)

    def standing(self, provider_id: str, contract_id: str) -> Standing:
        """Where the pair stands now, with why and the fixing command."""
        contract = self.contracts.get(contract_id)
        adaptive = contract is not None and not plan_check(contract).fixed_decides
        default_lock = lock_path_for(Path(self.providers_path or "providers.yaml"))
        command = certify_command(
            provider_id, contract_id, self.providers_path, self.contracts_dir, adaptive=adaptive,
            lock=str(self.lock.path) if self.lock.path != default_lock else None)
        cfg = self.providers.providers.get(provider_id)
        if cfg is None:
            return Standing(
                provider_id, contract_id, State.MISSING,
                f"provider {provider_id!r} is not in the providers file", f"run: {command}",
            )
        if contract is None:
            return Standing(
                provider_id, contract_id, State.MISSING,
                f"contract {contract_id!r} is not loaded", "add contracts/<id>/contract.yaml",
            )
        found = standing(
            provider=provider_id,
            contract=contract_id,
            config_hash=cfg.config_hash(),
            config=cfg.hashed_fields(),
            contract_hash=contract.hash,
            contract_version=contract.version,
            contract_parts=contract.parts,
            record=self.lock.get(provider_id, contract_id),
            now=self.clock.now(),
            command=command,
        )
        if found.state is State.MISSING and not self.lock.exists:  # say which file, and why
            found = replace(found, why=f"{found.why}: {self.lock.path} is missing")
        return found

    def is_eligible(self, provider_id: str, contract_id: str) -> tuple[bool, str]:
        """``(eligible, reason)`` for the failover runner."""
        s = self.standing(provider_id, contract_id)
        return s.eligible, f"{s.state}: {s.why}"
