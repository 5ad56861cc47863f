"""The fallback lists of a LiteLLM config, holding only fallbacks certified for the contract.

Pure: the standings come from the lock file (the same :func:`~harness.contracts.standing.standing`
the gate asks); this module only filters the lists and writes them as LiteLLM YAML to paste
into the config or to compare with it in CI.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.contracts.workspace import Workspace
from harness.gateways.portkey_export import certified_targets
from harness.gateways.portkey_source import PortkeySource
from harness.gateways.source import GatewaySource
from harness.providers.config import ProvidersFile

# (provider id, contract id) -> (certified?, the state's name, why)
Judge = Callable[[str, str], tuple[bool, str]]


@dataclass(frozen=True, slots=True)
class Dropped:
    """A fallback taken out of a list, and why."""

    where: str  # config.yaml:17 (router_settings.fallbacks[0].triage[1])
    group: str
    fallback: str
    reasons: tuple[str, ...]


@dataclass
class CertifiedLists:
    """Per settings section, the lists as they may stay, and what was dropped."""

    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # groups that serve no contract

    @property
    def differs(self) -> bool:
        return bool(self.dropped)

    def to_yaml(self, source: str) -> str:
        lines = [f"# Fallback lists of {source} holding only certified fallbacks",
                 "# (failover-harness export litellm-fallbacks). Paste them over the config's."]
        for d in self.dropped:
            lines.append(f"# dropped {d.fallback!r} from the fallbacks of {d.group!r} at "
                         f"{d.where}: {'; '.join(d.reasons)}")
        for group in self.unchecked:
            lines.append(f"# not checked: model group {group!r} serves no contract "
                         "(map it with contracts: in failover-harness.yaml or --contract-map)")
        body = yaml.safe_dump(self.sections, sort_keys=False, default_flow_style=None,
                              allow_unicode=True) if self.sections else (
            "# the config has no fallback lists: nothing to paste\n")
        return "\n".join(lines) + "\n" + body


def certified_lists(gateway: GatewaySource, judge: Judge) -> CertifiedLists:
    """Filter every fallback list of the config: keep a group only if each of its deployments
    is certified for the contract of the group it stands in for."""
    config = gateway.config
    out = CertifiedLists()
    contracts = sorted(set(gateway.contract_map.values()))

    def verdict(target: str, wanted: list[str]) -> tuple[str, ...]:
        reasons = []
        for pid in gateway.deployments_of(target):
            for contract in wanted:
                ok, why = judge(pid, contract)
                if not ok:
                    reasons.append(f"{pid} for {contract}: {why}")
        return tuple(reasons)

    for entry in config.fallbacks:
        contract = gateway.contract_map.get(entry.group)
        kept = []
        for i, target in enumerate(entry.fallbacks):
            if contract is None:
                kept.append(target)
                continue
            reasons = verdict(target, [contract])
            if reasons:
                where = config.where(entry.loc(i))
                out.dropped.append(Dropped(f"{where} ({entry.field(i)})", entry.group, target,
                                           reasons))
            else:
                kept.append(target)
        if contract is None and entry.group not in out.unchecked:
            out.unchecked.append(entry.group)
        # the list is printed even when every fallback was dropped (``fallbacks: []``): the
        # output replaces the config's lists, so an absent list would keep the uncertified ones
        lists = out.sections.setdefault(entry.section, {}).setdefault(entry.kind, [])
        if kept:
            lists.append({entry.group: kept})
    for default in config.default_fallbacks:
        kept = []
        for i, target in enumerate(default.groups):
            reasons = verdict(target, contracts)
            if reasons:
                where = config.where((default.section, "default_fallbacks", i))
                out.dropped.append(Dropped(
                    f"{where} ({default.section}.default_fallbacks[{i}])", "*", target, reasons))
            else:
                kept.append(target)
        out.sections.setdefault(default.section, {})["default_fallbacks"] = kept
    return out


def litellm_source(providers: ProvidersFile) -> GatewaySource | None:
    """The LiteLLM config ``providers`` was read from (None: another source)."""
    return providers.source if isinstance(providers.source, GatewaySource) else None


def portkey_export(ws: Workspace, output: Path | None) -> int:
    """``export portkey-targets``: print (or write) the certified Portkey config; exit 1 when
    a target had to be dropped (the gate fails on the same links)."""
    source = ws.providers.source
    assert isinstance(source, PortkeySource)  # the portkey: prefix forces its reader
    eligibility = ws.eligibility()

    def judge(provider: str, contract: str) -> tuple[bool, str]:
        s = eligibility.standing(provider, contract)
        return s.eligible, f"{s.state}: {s.why}"

    result = certified_targets(source, judge)
    if output is not None:
        output.write_text(result.to_json(), encoding="utf-8")
    else:
        sys.stdout.write(result.to_json())
    for line in result.dropped:
        print(f"export: dropped {line}", file=sys.stderr)
    return 1 if result.differs else 0
