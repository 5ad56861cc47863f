"""Where a job's providers come from: the providers source and a gateway's options, as settings.

The command line's ``--providers``, ``--contracts``, ``--lock``, ``--contract-map``, ``--via`` and
``--header`` (parsed in ``commands/_gateway.py``) become one frozen :class:`ProvidersSource`,
which opens the workspace (:func:`harness.gateways.sources.open_workspace`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.contracts.workspace import Workspace
from harness.gateways.sources import open_workspace


@dataclass(frozen=True, kw_only=True)
class ProvidersSource:
    """A providers source (``providers.yaml``, ``litellm:…``, ``portkey:…``), the folders
    beside it, and a gateway's options."""

    providers: Path
    contracts: Path | None = None  # default: contracts/ beside the providers file
    lock: Path | None = None  # default: <providers>.lock.json beside it
    contract_map: Mapping[str, str] | None = None  # a model group → the contract it serves
    via: str | None = None  # certify through the running gateway at this URL
    headers: Mapping[str, str] | None = None  # sent with every request through the gateway

    def open(self) -> Workspace:
        """The providers, their contracts and the lock file (ConfigError when one is wrong)."""
        return open_workspace(self.providers, self.contracts, self.lock,
                              contract_map=self.contract_map, via=self.via, headers=self.headers)
