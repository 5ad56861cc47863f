"""A Portkey config holding only targets certified for its contract (``failover-harness export
portkey-targets``): the same config, every fallback or loadbalanced target that is not
certified taken out (a nested group left empty goes too), and a line per target dropped and why.

Pure, like :mod:`harness.gateways.export`: the standings come from the lock file through
``judge``. The primary is never dropped (the route would change); the gate fails on it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.gateways.portkey_source import PortkeySource

Judge = Callable[[str, str], tuple[bool, str]]  # (provider, contract) -> (certified?, why)


@dataclass
class CertifiedTargets:
    config: dict[str, Any]
    dropped: list[str] = field(default_factory=list)  # "config.json:12 (targets[1]): why"

    @property
    def differs(self) -> bool:
        return bool(self.dropped)

    def to_json(self) -> str:
        return json.dumps(self.config, indent=2, ensure_ascii=False) + "\n"


def certified_targets(source: PortkeySource, judge: Judge) -> CertifiedTargets:
    """The config with every uncertified non-primary target removed (see the module)."""
    out = CertifiedTargets(copy.deepcopy(source.config.data))
    drop = []
    for pid, target in source.by_provider.items():
        certified, why = judge(pid, source.contract)
        if not certified and target.role != "primary":
            drop.append(target.loc)
            out.dropped.append(f"{source.where(pid)}: {pid} for {source.contract}: {why}")
    for loc in sorted(drop, reverse=True):  # later indexes first: earlier ones stay valid
        _remove(out.config, loc)
    return out


def _remove(doc: dict[str, Any], loc: tuple[str | int, ...]) -> None:
    """Remove the target at ``loc``; a ``targets`` list left empty takes its group with it."""
    *parent_loc, index = loc
    parent: Any = doc
    for part in parent_loc:
        parent = parent[part]
    if not isinstance(parent, list) or not isinstance(index, int):
        return
    del parent[index]
    if not parent and len(loc) >= 4:  # (…, "targets", i, "targets", j): the group is empty
        _remove(doc, tuple(loc[:-2]))
