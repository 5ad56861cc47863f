"""The entry point of ``gate``: the gate's verdict on the ``auto`` links of a providers source.

Apart from ``certify`` (:mod:`harness.campaign.certification`) because it certifies nothing: it
reads the lock file as it is, and a CI job that only gates does not import the certifier.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.contracts.emit import gate_verdict
from harness.contracts.events import GateVerdict
from harness.contracts.workspace import Workspace
from harness.domain.stream import QUIET, Begin, Folder, Live, entry_point
from harness.gateways.options import ProvidersSource


@dataclass(frozen=True, kw_only=True)
class GateSettings:
    """What ``gate`` judges: the ``auto`` links of a providers source against its lock."""

    source: ProvidersSource


@entry_point
def run_gate(settings: GateSettings, *, folder: Folder | None = None,
             live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness gate``: the gate's verdict on the lock file as it is."""
    workspace = settings.source.open()
    yield Begin()
    yield gate_event(workspace, settings.source)


def gate_event(workspace: Workspace, source: ProvidersSource) -> GateVerdict:
    return gate_verdict(workspace.gate(), lock_file=str(workspace.lock.path),
                        providers_file=str(source.providers))
