"""A gateway's config carried in a providers.yaml header: Portkey's ``x-portkey-config``.

A provider written by hand in front of Portkey (``base_url`` at the gateway, its route in
``headers: {x-portkey-config: '<JSON>'}``) carries the same config a ``portkey:config.json``
source holds. It is read the same way (:func:`~harness.gateways.portkey_config
.parse_portkey_config`), so what it makes the gateway change in every request is judged: an
``override_params.temperature`` above the contract's ``max_temperature`` makes the provider
ineligible, naming the temperature, the gateway and the header's line in providers.yaml — the
client's own temperature says nothing about what the model is sent. Its ``${NAME}`` variables are
read as the client reads them. The check (``gateway_config``) is added after the samples, to
every record the calls reached (no call reached: no verdict, as everywhere).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.contracts.model import Contract
from harness.contracts.records import CertificationRecord, ContractCheck, Evidence
from harness.domain.errors import ConfigError
from harness.gateways.portkey_config import parse_portkey_config
from harness.providers.config import ProviderConfig, ProvidersFile
from harness.yamlsrc import load_yaml

if TYPE_CHECKING:  # annotations only: importing them would import the certifier
    from harness.contracts.certifier import PostAudit
    from harness.contracts.judgement import Pairing

CHECK = "gateway_config"
HEADERS = {"x-portkey-config": "Portkey"}  # header (lower case) → the gateway that reads it


@dataclass(frozen=True, slots=True)
class HeaderConfig:
    """The gateway config one provider sends in a header, and where providers.yaml writes it."""

    provider: str
    gateway: str  # "Portkey"
    header: str
    where: str  # providers.yaml:12 (providers.fallback.headers.x-portkey-config)
    targets: list[tuple[str, dict[str, Any]]]  # (where in the config, its override_params)


def header_configs(
    providers: ProvidersFile, path: Path, only: Collection[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, HeaderConfig]:
    """Provider id (of ``only``, else all) → the gateway config in its headers; ConfigError at
    the header's line when the value is not JSON. A value that is no JSON object (a saved
    config's id, on Portkey's hosted service) holds nothing to read; a config the ``portkey:``
    source cannot address (virtual keys, conditional routing) still has its overrides read."""
    env = os.environ if env is None else env
    out: dict[str, HeaderConfig] = {}
    source = None
    for pid, cfg in providers.providers.items():
        if only is not None and pid not in only:
            continue
        names = [name for name in cfg.headers if name.lower() in HEADERS]
        if not names:
            continue
        if source is None:
            source = load_yaml(path)
        name = names[0]
        field = f"providers.{pid}.headers.{name}"
        line = source.line_of(("providers", pid, "headers", name))
        text = cfg.header_values(env)[name]
        if not text.lstrip().startswith("{"):
            continue
        try:
            targets = [(t.where, t.override_params)
                       for t in parse_portkey_config(text, Path(name)).targets]
        except ConfigError as exc:
            try:
                targets = _overrides(json.loads(text), (), {})
            except ValueError:
                problem = str(exc).split("\n", 1)[0]
                raise ConfigError(
                    f"the {name} header is not a {HEADERS[name.lower()]} config ({problem})",
                    file=str(path), line=line, field=field,
                    fix="write the gateway's config as JSON in the header") from None
        out[pid] = HeaderConfig(pid, HEADERS[name.lower()], name,
                                f"{path}:{line} ({field})" if line else f"{path} ({field})",
                                targets)
    return out


def _overrides(node: Any, loc: tuple[str | int, ...],
               inherited: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each leaf target's ``override_params`` (inherited, then its own), as Portkey applies
    them, for a config the strict reader refuses; a shape Portkey would refuse holds none."""
    if not isinstance(node, dict):
        return []
    own = node.get("override_params")
    params = {**inherited, **own} if isinstance(own, dict) else inherited
    children = node.get("targets")
    if not isinstance(children, list):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return [(where or "(config)", params)]
    return [found for i, child in enumerate(children)
            for found in _overrides(child, (*loc, "targets", i), params)]


def header_config_audit(configs: Mapping[str, HeaderConfig]) -> PostAudit:
    """The post-audit adding :func:`header_config_check` to the records of ``configs``."""

    async def audit(records: list[CertificationRecord],
                    pairings: list[Pairing]) -> list[CertificationRecord]:
        contracts = {p.contract.id: p.contract for p in pairings}
        by_id = {p.provider.id: p.provider for p in pairings}
        out = []
        for record in records:
            found = configs.get(record.provider)
            if found is None or record.unreached or record.contract not in contracts:
                out.append(record)
                continue
            check = header_config_check(contracts[record.contract], by_id[record.provider], found)
            verdict = "ineligible" if check.decision == "broken" else record.verdict
            out.append(replace(record, checks=(*record.checks, check), verdict=verdict))
        return out

    return audit


def header_config_check(contract: Contract, cfg: ProviderConfig,
                        found: HeaderConfig) -> ContractCheck:
    """Does the header's config keep every request within the contract? (its targets'
    ``override_params.temperature`` against ``max_temperature``)."""
    limit = contract.thresholds.max_temperature
    gateway = f"the {found.gateway} gateway ({cfg.base_url})"
    evidence: list[Evidence] = []
    for where, params in found.targets:
        value = params.get("temperature")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > limit:
            param = ("override_params.temperature" if where == "(config)"
                     else f"{where}.override_params.temperature")
            evidence.append(Evidence("*", (
                f"{gateway} sets temperature {value:g} (the client sends {cfg.temperature:g}, "
                f"the contract allows at most {limit:g}): {param} in the header's config at "
                f"{found.where}")))
    figures = {"header": found.header, "targets": len(found.targets),
               "max_temperature": limit}
    if evidence:
        return ContractCheck.build(CHECK, "broken", evidence[0].reason, figures, evidence)
    return ContractCheck.build(
        CHECK, "held", f"the {found.header} config keeps every request within the contract "
        f"(temperature at most {limit:g})", figures, [])


def header_audits(providers: ProvidersFile, path: Path,
                  pairings: Sequence[Pairing]) -> list[PostAudit]:
    """The header-config audit when a provider of ``pairings`` sends a gateway config."""
    configs = header_configs(providers, path, {p.provider.id for p in pairings})
    return [header_config_audit(configs)] if configs else []
