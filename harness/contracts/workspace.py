"""What certify and gate work on: the providers (already read from their source), the contracts,
the lock file and the cassettes.

The providers come from :mod:`harness.gateways.sources` (providers.yaml or a gateway's config);
a gateway's config says where its links come from through ``ProvidersFile.source``, so the
fixes here name that file's lines without this module knowing any gateway.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.contracts.decidable import PlanCheck, needs_adaptive
from harness.contracts.eligibility import LockFileEligibility
from harness.contracts.loader import load_contracts
from harness.contracts.lockfile import LockFile, lock_path_for, read_lock
from harness.contracts.model import Contract
from harness.contracts.records import CertificationRecord
from harness.contracts.standing import Standing, undecided_fix
from harness.domain.clock import Clock
from harness.domain.errors import ConfigError
from harness.providers.classify import unreached_setting
from harness.providers.config import ProvidersFile
from harness.yamlsrc import load_yaml


@dataclass
class Workspace:
    """The providers file and everything beside it."""

    providers_path: Path
    providers: ProvidersFile
    contracts_dir: Path
    contracts: dict[str, Contract]
    lock: LockFile

    @property
    def cassettes_dir(self) -> Path:
        return self.providers_path.parent / "cassettes"

    def eligibility(self, clock: Clock | None = None) -> LockFileEligibility:
        found_anyway = {(d / "contracts").resolve() for d in (self.providers_path.parent,
                                                                  Path.cwd())}
        return LockFileEligibility(
            self.providers, self.contracts, self.lock, clock=clock,
            providers_path=str(self.providers_path),
            contracts_dir=None if self.contracts_dir.resolve() in found_anyway
            else str(self.contracts_dir),
        )

    def auto_links(self) -> list[tuple[str, str]]:
        """(provider, contract) for every chain link that automatic failover may use."""
        return [
            (link.provider, contract)
            for contract, chain in sorted(self.providers.chains.items())
            for link in chain
            if link.failover == "auto"
        ]

    def undecidable(self, contracts: list[Contract]) -> list[PlanCheck]:
        """The contracts whose fixed plan cannot certify even a perfect provider (said when
        they load; ``certify`` and ``check`` then sample adaptively)."""
        return needs_adaptive(contracts)

    def fix_for(self, record: CertificationRecord, command: str) -> str:
        """The fix line of a certification that is not eligible (certify and check)."""
        if record.unreached:
            return self.reach_fix(record.provider, record.unreached, command)
        if record.verdict == "undecided":
            return undecided_fix(record, command)
        return self.ineligible_fix(record.provider, record.contract, command)

    def ineligible_fix(self, provider: str, contract: str, command: str) -> str:
        """What to do about an ineligible provider, in the terms of the providers' source."""
        source = self.providers.source
        if source is not None:  # a gateway's config: no 'failover: manual' there
            return source.ineligible_fix(provider, contract, command)
        return (f"make it meet the contract or set 'failover: manual' on its link in "
                f"{self.providers_path}, then run: {command}")

    def reach_fix(self, provider: str, reason: str, command: str) -> str:
        """What to check when no call reached ``provider`` (``reason`` names why, in
        :func:`~harness.providers.classify.unreached`'s words)."""
        cfg = self.providers.providers[provider]
        setting = unreached_setting(reason)
        key = (f"the key in ${cfg.api_key_env}" if cfg.api_key_env else
               "the API key (none is configured: set api_key_env)")
        source = self.providers.source
        hint = source.reach_hint(provider, setting) if source is not None else None
        if hint is not None:
            what = hint
        elif cfg.via and setting == "upstream":
            what = (f"that the gateway at {cfg.via} can reach the provider: the network and "
                    "its address, as the gateway sees them")
        elif cfg.via:
            what = (f"that the gateway runs at {cfg.via} and accepts {key}, with the "
                    "headers it asks for (headers:, --header)"
                    if setting != "model" else
                    f"that the gateway at {cfg.via} serves model {cfg.model!r}")
        else:
            field = {"key": "api_key_env", "model": "model"}.get(setting, "base_url")
            if setting == "request" and cfg.headers:
                field = "headers"
            line = load_yaml(self.providers_path).line_of(("providers", provider, field))
            at = f"{self.providers_path}:{line}" if line else str(self.providers_path)
            what = {"key": key, "model": "base_url and the model name",
                    "request": "the headers the server at base_url asks for (a gateway's "
                    "routing header: headers:, --header) and base_url"}.get(
                        setting, "the network and base_url") + f" ({at}, providers.{provider})"
        return (f"make the provider reachable (network, base_url, API key): check {what} (an "
                f"earlier record of it, if there is one, stays in the lock file), then run: "
                f"{command}")

    def gate(self, clock: Clock | None = None) -> list[Standing]:
        """The standing of every ``auto`` link."""
        eligibility = self.eligibility(clock)
        standings = [eligibility.standing(p, c) for p, c in self.auto_links()]
        source = self.providers.source  # a gateway's config: name its lines
        return source.locate(standings) if source is not None else standings


def workspace_for(
    providers_path: Path, providers: ProvidersFile, contracts_dir: Path | None = None,
    lock_path: Path | None = None, *, project_dir: Path | None = None,
) -> Workspace:
    """The workspace around ``providers`` (read from ``providers_path``): its contracts
    (``contracts_dir``; else ``contracts/`` beside the providers file, else in ``project_dir``,
    the folder of failover-harness.yaml or the current one) and its lock file."""
    searched = [contracts_dir] if contracts_dir else list(dict.fromkeys(
        [providers_path.parent / "contracts", (project_dir or Path.cwd()) / "contracts"]))
    contracts_dir = next((d for d in searched if d.is_dir()), searched[0])
    if len(searched) > 1 and not contracts_dir.is_dir():
        raise ConfigError(
            f"contracts folder not found: neither {searched[0]} (beside the providers file) nor "
            f"{searched[1]} (in the project) exists", file=str(providers_path),
            field="--contracts",
            fix="create one of them (a folder holding <name>/contract.yaml), or pass "
                "--contracts DIR")
    contracts = load_contracts(contracts_dir)
    for contract_id in providers.chains:
        if contract_id not in contracts:
            if providers.source is not None:
                raise providers.source.missing_contract(contract_id, searched)
            raise ConfigError(
                f"the chain for contract {contract_id!r} has no contract in {contracts_dir}",
                file=str(providers_path),
                line=load_yaml(providers_path).line_of(("chains", contract_id)),
                field=f"chains.{contract_id}",
                fix=f"create {contracts_dir / contract_id / 'contract.yaml'}, fix the chain's "
                "name, or pass --contracts DIR",
            )
    lock = read_lock(lock_path or lock_path_for(providers_path))
    return Workspace(providers_path, providers, contracts_dir, contracts, lock)
