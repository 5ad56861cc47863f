"""Find and load what certify and gate work on: providers file, contracts, lock file, cassettes."""

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
from harness.gateways.litellm_config import strip_prefix
from harness.providers.classify import unreached_setting
from harness.providers.config import ProvidersFile, load_providers
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
        return LockFileEligibility(
            self.providers, self.contracts, self.lock, clock=clock,
            providers_path=str(self.providers_path),
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
        gateway = getattr(self.providers, "gateway", None)
        if gateway is not None:  # a LiteLLM config: no 'failover: manual' there
            return str(gateway.ineligible_fix(provider, contract, command))
        return (f"make it meet the contract or set 'failover: manual' on its link in "
                f"{self.providers_path}, then run: {command}")

    def reach_fix(self, provider: str, reason: str, command: str) -> str:
        """What to check when no call reached ``provider`` (``reason`` names why, in
        :func:`~harness.providers.classify.unreached`'s words)."""
        cfg = self.providers.providers[provider]
        setting = unreached_setting(reason)
        gateway = getattr(self.providers, "gateway", None)
        via = getattr(cfg, "via", None)
        if via and setting == "upstream":
            at = f" at {gateway.where(provider, 'api_base')}" if gateway is not None else ""
            what = (f"that the gateway at {via} can reach the provider: the network and "
                    f"api_base{at}, as the gateway sees them")
        elif via:
            what = (f"that the gateway runs at {via} and accepts the key in ${cfg.api_key_env}"
                    if setting != "model" else
                    f"that the gateway at {via} serves model {cfg.model!r}")
        elif gateway is not None:
            param = {"key": "api_key", "model": "model"}.get(setting, "api_base")
            what = {"key": f"the key in ${cfg.api_key_env}",
                    "model": "api_base and the model name"}.get(setting, "the network and api_base")
            deployment = gateway.deployment(provider)
            if param == "api_base" and deployment is not None and not deployment.api_base:
                # no api_base written: the provider's public API is meant (qa Q3b)
                what += f" (none set, so {cfg.base_url}) of {gateway.where(provider)}"
            else:
                what += f" at {gateway.where(provider, param)}"
        else:
            field = {"key": "api_key_env", "model": "model"}.get(setting, "base_url")
            line = load_yaml(self.providers_path).line_of(("providers", provider, field))
            at = f"{self.providers_path}:{line}" if line else str(self.providers_path)
            what = {"key": f"the key in ${cfg.api_key_env}",
                    "model": "base_url and the model name"}.get(
                        setting, "the network and base_url") + f" ({at}, providers.{provider})"
        return (f"make the provider reachable (network, base_url, API key): check {what} (an "
                f"earlier record of it, if there is one, stays in the lock file), then run: "
                f"{command}")

    def gate(self, clock: Clock | None = None) -> list[Standing]:
        """The standing of every ``auto`` link."""
        eligibility = self.eligibility(clock)
        standings = [eligibility.standing(p, c) for p, c in self.auto_links()]
        gateway = getattr(self.providers, "gateway", None)  # a LiteLLM config: name its lines
        return gateway.locate(standings) if gateway else standings


def open_workspace(
    providers_path: Path, contracts_dir: Path | None = None, lock_path: Path | None = None,
    *, contract_map: dict[str, str] | None = None, via: str | None = None,
) -> Workspace:
    """Load the providers file, its contracts (default: ``contracts/`` beside it) and lock file.

    The providers file may be a LiteLLM config (``litellm:config.yaml``; ``contract_map`` and
    ``via`` apply to it, see :mod:`harness.gateways.source`).
    """
    providers = load_providers(providers_path, contract_map=contract_map, via=via)
    providers_path = strip_prefix(providers_path)[0]
    contracts_dir = contracts_dir or providers_path.parent / "contracts"
    contracts = load_contracts(contracts_dir)
    for contract_id in providers.chains:
        if contract_id not in contracts:
            gateway = getattr(providers, "gateway", None)
            if gateway is not None:
                raise gateway.missing_contract(contract_id, contracts_dir)
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
