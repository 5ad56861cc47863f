"""Where a command's workspace opens: which kind of providers source a file is, read it, and
load the contracts and lock file around it.

``--providers`` names providers.yaml, a LiteLLM proxy config (``litellm:config.yaml``, or any
YAML file with ``model_list``) or a Portkey gateway config (``portkey:config.json``, or any JSON
file shaped like one: ``targets``, ``strategy``, ``provider``…). Another gateway gets one line
naming the sources known and how to describe any OpenAI-compatible gateway in providers.yaml
(``base_url`` + ``headers``). This is the only place that tells them apart: ``providers/`` reads
providers.yaml and ``contracts/`` works on the result, neither knows gateways.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.contracts.workspace import Workspace, workspace_for
from harness.domain.errors import ConfigError
from harness.gateways.audit import gateway_audit
from harness.gateways.header_config import header_audits
from harness.gateways.litellm_config import LITELLM_PREFIX
from harness.gateways.portkey_config import PORTKEY_PREFIX, looks_like_portkey
from harness.gateways.portkey_source import load_portkey_providers
from harness.gateways.source import PROJECT_FILE, load_litellm_providers, project_settings
from harness.providers.config import ProviderConfig, ProvidersFile, load_providers

if TYPE_CHECKING:  # annotations only: importing them would import the certifier
    from harness.contracts.certifier import PostAudit
    from harness.contracts.judgement import Pairing

KNOWN = ("providers.yaml", f"a LiteLLM proxy config ({LITELLM_PREFIX}config.yaml)",
         f"a Portkey gateway config ({PORTKEY_PREFIX}config.json)")
ANY_GATEWAY_FIX = (
    "for any other OpenAI-compatible gateway, describe each provider behind it in providers.yaml "
    "with `base_url: <the gateway's URL>` and `headers: {<its routing header>: ...}` (values "
    "may name variables as ${NAME}); see docs/gateways.md")
_PREFIX = re.compile(r"^([a-z][a-z0-9-]{1,20}):(?!//)(.+)$")


def source_kind(path: str | Path) -> tuple[str, Path]:
    """(``providers`` | ``litellm`` | ``portkey``, the file): by prefix, else by shape."""
    text = str(path)
    match = _PREFIX.match(text)
    if match and not Path(text).exists():
        prefix, rest = match.groups()
        if prefix in ("litellm", "portkey", "providers"):
            return prefix, Path(rest)
        raise ConfigError(
            f"{prefix!r} is not a providers source failover-harness reads (it knows "
            f"{', '.join(KNOWN)})", file=rest, field="--providers", fix=ANY_GATEWAY_FIX)
    file = Path(text)
    head = _head(file)
    if file.suffix in (".yaml", ".yml") and re.search(r"^model_list\s*:", head, re.M) and not (
            re.search(r"^providers\s*:", head, re.M)):
        return "litellm", file
    if file.suffix == ".json":
        try:
            data = json.loads(head)
        except ValueError:
            data = None
        if looks_like_portkey(data):
            return "portkey", file
        if isinstance(data, Mapping) and "providers" not in data:
            raise ConfigError(
                "not a providers source failover-harness reads: a JSON file that is not a "
                f"Portkey config (it knows {', '.join(KNOWN)})", file=str(file),
                field="--providers", fix=ANY_GATEWAY_FIX)
    if file.suffix in (".yaml", ".yml") and re.search(r"^[A-Za-z_]\w*\s*:", head, re.M) and not (
            re.search(r"^(providers|version|chains)\s*:", head, re.M)):
        raise ConfigError(
            "not a providers source failover-harness reads: no `providers:` (providers.yaml) "
            f"and no `model_list:` (LiteLLM); it knows {', '.join(KNOWN)}", file=str(file),
            line=1, field="--providers", fix=ANY_GATEWAY_FIX)
    return "providers", file


def source_file(path: str | Path) -> Path:
    """The file a ``--providers`` value names (its ``litellm:`` / ``portkey:`` prefix off)."""
    match = _PREFIX.match(str(path))
    return Path(match.group(2)) if match and not Path(str(path)).exists() else Path(path)


def load_source(
    path: str | Path, *, contract_map: Mapping[str, str] | None = None, via: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[ProvidersFile, Path]:
    """The providers and chains of ``path`` (any known source), and the file itself."""
    kind, file = source_kind(path)
    project = project_settings(file.parent / PROJECT_FILE)  # its headers: under --header's
    headers = {**(project.get("headers") or {}), **(headers or {})}
    if kind == "litellm":
        providers: ProvidersFile = load_litellm_providers(file, contract_map=contract_map,
                                                          via=via)
    elif kind == "portkey":
        providers = load_portkey_providers(file, contract_map=contract_map, via=via)
    else:
        if contract_map or via:
            option = "--contract-map" if contract_map else "--via"
            raise ConfigError(
                f"{option} applies to a gateway's config, and {file} is providers.yaml",
                field=option, fix="leave it out, and write the gateway in providers.yaml as "
                "`base_url: <gateway URL>` with `via:` and `headers:` (see docs/gateways.md)")
        providers = load_providers(file)
    return with_headers(providers, headers), file


def with_headers(providers: ProvidersFile, headers: Mapping[str, str] | None) -> ProvidersFile:
    """``--header`` / ``headers:`` of failover-harness.yaml: sent by every provider that goes
    through a gateway (every provider when none does), replacing a header of the same name."""
    if not headers:
        return providers
    through = [p for p in providers.providers.values() if p.via]
    chosen = {p.id for p in through} if through else set(providers.providers)
    changed: dict[str, ProviderConfig] = {}
    for pid, cfg in providers.providers.items():
        if pid in chosen:
            kept = {k: v for k, v in cfg.headers.items()
                    if k.lower() not in {h.lower() for h in headers}}
            cfg = cfg.model_copy(update={"headers": {**kept, **headers}})
        changed[pid] = cfg
    out = providers.model_copy(update={"providers": changed})
    if providers.source is not None:
        out.with_source(providers.source)
    return out


def audits_for(providers: ProvidersFile, targets: Sequence[Pairing],
               path: Path | None = None) -> list[PostAudit]:
    """The post-audits of a certification: the gateway audit when a provider is reached
    through a gateway (what the provider behind it received; config lines from the source),
    and, for providers.yaml at ``path``, the audit of a gateway config sent in a header
    (:mod:`harness.gateways.header_config`; ConfigError now, before any call, when it is
    wrong)."""
    source = providers.source
    audits = []
    if any(t.provider.via for t in targets):
        audits.append(gateway_audit(source.where if source is not None else None))
    if path is not None and source is None:
        audits += header_audits(providers, path, targets)
    return audits


def open_workspace(
    providers_path: Path, contracts_dir: Path | None = None, lock_path: Path | None = None,
    *, contract_map: Mapping[str, str] | None = None, via: str | None = None,
    headers: Mapping[str, str] | None = None, project_dir: Path | None = None,
) -> Workspace:
    """Read the providers source, its contracts and lock file (see :func:`workspace_for`:
    contracts beside the source, else in the project folder)."""
    providers, file = load_source(providers_path, contract_map=contract_map, via=via,
                                  headers=headers)
    project = project_dir or _project_dir(file)
    return workspace_for(file, providers, contracts_dir, lock_path, project_dir=project)


def _project_dir(file: Path) -> Path:
    """The folder of failover-harness.yaml (beside the source, else the current one)."""
    return file.parent if (file.parent / PROJECT_FILE).exists() else Path.cwd()


def _head(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""  # the reader of the kind it is taken for says what is wrong
