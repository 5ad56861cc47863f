"""A LiteLLM config as a provider source: deployments become providers, fallbacks become chains.

``--providers litellm:config.yaml`` (or any file shaped like one) loads through
:func:`load_litellm_providers`, which returns a :class:`GatewayProviders` — a
:class:`~harness.providers.config.ProvidersFile`, so ``certify``, ``gate`` and ``check`` work
on it unchanged — that also remembers where each link came from in the LiteLLM file.

Which contract a model group serves comes from ``contracts: {GROUP: ID}`` in
``failover-harness.yaml`` beside the config, or ``--contract-map GROUP=ID``. A group's chain is
its own deployments, then every deployment its fallback lists can reach (transitively: LiteLLM
may fall back from a fallback), all ``auto``: a gateway fails over without asking anyone.

A deployment's certification binds to its *effective* config: upstream kind, ``api_base``,
model, temperature, max tokens, every other ``litellm_params`` entry that changes the request
and the ``litellm_settings`` that do (``drop_params``…), never how it is reached (``--via``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, ValidationError

from harness.domain.errors import ConfigError
from harness.domain.redaction import register_secret
from harness.gateways.litellm_config import (
    TRANSPORT_PARAMS,
    LiteLLMConfig,
    LiteLLMDeployment,
    read_litellm_config,
)
from harness.gateways.litellm_origins import (
    DEFAULT_KEY_ENV,
    UPSTREAMS,
    GatewaySource,
    Origin,
    _loc,
)
from harness.project import load_project
from harness.providers.config import ProviderConfig, ProvidersFile, Timeout
from harness.yamlsrc import YamlSource, load_yaml

PROJECT_FILE = "failover-harness.yaml"
DEFAULT_VIA_KEY_ENV = "LITELLM_MASTER_KEY"
PROVIDER_DEFAULT_TEMPERATURE = 1.0  # OpenAI's and Anthropic's default when none is sent
DEFAULT_CONTEXT_WINDOW = 128000
_ID_BAD = re.compile(r"[^A-Za-z0-9._-]+")


class Deployment(ProviderConfig):
    """A LiteLLM deployment as a provider: reached directly, or through the gateway (``via``)."""

    group: str
    litellm_params: dict[str, Any]  # what else changes the request (secrets as names only)
    # Where the key's variable is named (file, line, field) and how to fix a missing one.
    _key_origin: tuple[str | None, int | None, str, str, str] | None = PrivateAttr(default=None)

    def missing_key(self) -> ConfigError:
        """The missing key's variable, at the line of the LiteLLM config (or failover-harness.yaml
        for the gateway's key) that names it."""
        if self._key_origin is None:
            return super().missing_key()
        file, line, field, why, fix = self._key_origin
        return ConfigError(f"environment variable {self.api_key_env} is not set: {why}",
                           file=file, line=line, field=field, fix=fix)

    def hashed_fields(self) -> dict[str, Any]:
        """The deployment's effective config: upstream, not the channel used to certify it."""
        fields = super().hashed_fields()
        fields.update(self.upstream or {})
        fields["litellm_params"] = self.litellm_params
        return fields


class GatewayProviders(ProvidersFile):
    """A ProvidersFile read from a LiteLLM config; ``.gateway`` keeps the LiteLLM details."""

    @property
    def gateway(self) -> GatewaySource | None:
        return self._source if isinstance(self._source, GatewaySource) else None


def parse_pairs(items: Iterable[str], sep: str, option: str, shape: str, fix: str,
                valid: Callable[[str], object] = bool) -> dict[str, str]:
    """``NAME<sep>VALUE`` command-line items → a dict (ConfigError naming ``option``)."""
    out: dict[str, str] = {}
    for item in items:
        name, found, value = item.partition(sep)
        if not found or not name.strip() or not value.strip() or not valid(name.strip()):
            raise ConfigError(f"{option} {name.strip()[:40]!r}… is not {shape}", field=option,
                              fix=fix)
        out[name.strip()] = value.strip()
    return out


def parse_contract_map(items: Iterable[str]) -> dict[str, str]:
    """``["triage=ticket_triage", …]`` (``--contract-map``) → ``{"triage": "ticket_triage"}``."""
    return parse_pairs(items, "=", "--contract-map", "GROUP=CONTRACT",
                       "write --contract-map my-model-group=my_contract")


def parse_headers(items: Iterable[str]) -> dict[str, str]:
    """``["x-portkey-config: {...}", …]`` (``--header NAME:VALUE``) → a dict. Each value is
    registered as a secret (a key in a header): it is removed from every output."""
    headers = parse_pairs(items, ":", "--header", "NAME:VALUE",
                          "write --header 'x-portkey-config: {\"provider\": ...}'",
                          valid=re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+").fullmatch)
    for value in headers.values():
        if "${" not in value:  # a ${VAR} is shown as written; its value is registered when read
            register_secret(value)
    return headers


def load_litellm_providers(
    path: str | Path,
    *,
    contract_map: Mapping[str, str] | None = None,
    via: str | None = None,
    source: YamlSource | None = None,
) -> GatewayProviders:
    """The providers and chains of a LiteLLM config (see the module docstring)."""
    config = read_litellm_config(path, source)
    project = project_settings(config.path.parent / PROJECT_FILE)
    mapping = dict(project.get("contracts") or {})
    origin = str(config.path.parent / PROJECT_FILE)
    if contract_map:
        mapping.update(contract_map)
        origin = "--contract-map"
    via = via or project.get("via")
    via_key_env = str(project.get("via_api_key_env") or DEFAULT_VIA_KEY_ENV)
    groups = config.groups()
    if not mapping:
        raise ConfigError(
            "no model group is mapped to a contract, so there is nothing to certify or gate",
            file=str(config.path),
            fix=f"write `contracts: {{{next(iter(groups))}: <contract id>}}` in "
                f"{config.path.parent / PROJECT_FILE}, or pass --contract-map GROUP=CONTRACT",
        )
    for group in mapping:
        if group not in groups:
            raise ConfigError(
                f"model group {group!r} (in the contract map) is not in {config.path}",
                file=origin if origin != "--contract-map" else None,
                field=f"contracts.{group}" if origin != "--contract-map" else "--contract-map",
                fix=f"use one of the model groups: {', '.join(sorted(groups))}",
            )
    ids = provider_ids(config)
    providers = {
        ids[d.index]: _deployment_provider(config, d, ids[d.index], via=via,
                                           via_key_env=via_key_env)
        for d in config.deployments
    }
    gateway = GatewaySource(config, mapping, origin, via, ids)
    chains: dict[str, list[dict[str, str]]] = {}
    for group, contract in sorted(mapping.items()):
        chain = chains.setdefault(contract, [])
        for pid, why in _reachable(config, gateway, group):
            if all(link["provider"] != pid for link in chain):
                chain.append({"provider": pid, "failover": "auto"})
                gateway.origins.setdefault((pid, contract), why)
    try:
        parsed = GatewayProviders.model_validate({"providers": providers, "chains": chains})
    except ValidationError as exc:  # pragma: no cover - the deployments were validated above
        raise ConfigError(str(exc), file=str(config.path)) from None
    parsed.with_source(gateway)
    return parsed


def no_contract_map(path: str | Path, contract_map: Mapping[str, str] | None) -> bool:
    """True when neither ``--contract-map`` nor failover-harness.yaml maps any group."""
    if contract_map:
        return False
    config_path = Path(str(path).removeprefix("litellm:"))
    return not project_settings(config_path.parent / PROJECT_FILE).get("contracts")


def project_settings(path: Path) -> dict[str, Any]:
    """The gateway settings of the project file (read and checked by :mod:`harness.project`)."""
    if not path.exists():
        return {}
    project = load_project(path)
    return {"contracts": project.contracts, "via": project.via,
            "via_api_key_env": project.via_api_key_env, "headers": project.headers}


def provider_ids(config: LiteLLMConfig) -> dict[int, str]:
    """A provider id per deployment: ``model_info.id``, else the group (``group.N`` if shared)."""
    ids: dict[int, str] = {}
    taken: set[str] = set()
    for group, deployments in config.groups().items():
        for n, d in enumerate(deployments, start=1):
            wanted = d.model_info.get("id")
            base = str(wanted) if wanted else (group if len(deployments) == 1 else f"{group}.{n}")
            pid = _ID_BAD.sub("-", base).strip("-._")[:60] or f"deployment-{d.index}"
            candidate, k = pid, 2
            while candidate in taken:
                candidate, k = f"{pid}-{k}", k + 1
            taken.add(candidate)
            ids[d.index] = candidate
    return ids


def _upstream(config: LiteLLMConfig, d: LiteLLMDeployment) -> tuple[str, str, str, str]:
    """(prefix, kind, base_url, model) of the deployment's provider."""
    prefix, sep, name = d.model.partition("/")
    if not sep:
        prefix, name = ("anthropic" if d.model.startswith("claude") else "openai"), d.model
    if prefix not in UPSTREAMS:
        raise ConfigError(
            f"deployment {d.group!r} uses LiteLLM provider {prefix!r}, whose wire format "
            "failover-harness does not speak directly",
            file=str(config.path), line=config.source.line_of((*_loc(d), "model")),
            field=f"{d.where}.litellm_params.model",
            fix="certify it through the gateway: pass --via http://<proxy> (or write `via:` in "
                f"{PROJECT_FILE}), so the samples travel client → LiteLLM → provider",
        )
    kind, default_base = UPSTREAMS[prefix]
    return prefix, kind, d.api_base or default_base, name


def _deployment_provider(
    config: LiteLLMConfig, d: LiteLLMDeployment, pid: str, *, via: str | None, via_key_env: str
) -> Deployment:
    loc = _loc(d)
    if via:  # the wire is the gateway's OpenAI-compatible API, whatever the upstream speaks
        prefix, sep, name = d.model.partition("/")
        # an upstream we do not speak keeps LiteLLM's provider name (its wire is the gateway's)
        upstream_kind = UPSTREAMS.get(prefix, (prefix, ""))[0] if sep else (
            "anthropic-messages" if d.model.startswith("claude") else "openai-chat")
        default_base = UPSTREAMS[prefix][1] if sep and prefix in UPSTREAMS else (
            "" if sep else UPSTREAMS["anthropic" if d.model.startswith("claude") else "openai"][1])
        upstream = {"kind": upstream_kind, "base_url": d.api_base or default_base,
                    "model": d.model}
    else:
        prefix, upstream_kind, base, name = _upstream(config, d)
        upstream = {"kind": upstream_kind, "base_url": base, "model": d.model}
        if d.api_key_literal:
            raise ConfigError(
                f"deployment {d.group!r} has its API key written in the file; failover-harness "
                "reads keys only from the environment (the value is not shown here)",
                file=str(config.path), line=config.source.line_of((*loc, "api_key")),
                field=f"{d.where}.litellm_params.api_key",
                fix="write `api_key: os.environ/<VARIABLE>` and export the key, or certify "
                    "through the gateway with --via",
            )
    params = d.params
    temperature = params.get("temperature", PROVIDER_DEFAULT_TEMPERATURE)
    max_tokens = params.get("max_tokens", params.get("max_completion_tokens", 1024))
    info = d.model_info
    context = info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW
    hashed = {k: v for k, v in sorted(params.items())
              if k not in TRANSPORT_PARAMS and k not in ("temperature", "max_tokens")}
    hashed.update({f"litellm_settings.{k}": v for k, v in sorted(config.settings.items())})
    body: dict[str, Any] = {
        "id": pid,
        "group": d.group,
        "upstream": upstream,
        "litellm_params": hashed,
        "temperature": temperature,
        "max_output_tokens": max_tokens,
        "timeout": _timeout(params),
        "tokenizer": info.get("tokenizer") or _tokenizer_for(d.model),
        "context_window": context,
    }
    if via:
        deployments = config.groups()[d.group]
        if len(deployments) > 1 and not info.get("id"):
            raise ConfigError(
                f"model group {d.group!r} has {len(deployments)} deployments: through the "
                "gateway, a sample sent to the group could be answered by any of them",
                file=str(config.path), line=d.line, field=f"{d.where}.model_info.id",
                fix="give each deployment of the group `model_info: {id: <name>}` (LiteLLM then "
                    "routes a request for that id to that deployment), or certify without --via",
            )
        address = str(info["id"]) if len(deployments) > 1 else d.group
        body.update(kind="openai-chat", base_url=via.rstrip("/"), model=address,
                    api_key_env=via_key_env, via=via.rstrip("/"))
    else:
        body.update(kind=upstream_kind, base_url=upstream["base_url"], model=name,
                    api_key_env=d.api_key_env or DEFAULT_KEY_ENV[prefix])
    try:
        made = Deployment.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        name_ = str(first["loc"][-1]) if first["loc"] else "litellm_params"
        where = {"temperature": "temperature", "max_output_tokens": "max_tokens",
                 "base_url": "api_base", "tokenizer": "model_info"}.get(name_, name_)
        raise ConfigError(
            f"deployment {d.group!r}: {first['msg'].removeprefix('Value error, ')}",
            file=str(config.path),
            line=config.source.line_of((*loc, where)) or d.line,
            field=f"{d.where}.litellm_params.{where}",
            fix="correct the value in the LiteLLM config",
        ) from None
    made._key_origin = _key_origin(config, d, made, via=via)
    return made


def _key_origin(
    config: LiteLLMConfig, d: LiteLLMDeployment, made: Deployment, *, via: str | None,
) -> tuple[str | None, int | None, str, str, str]:
    """(file, line, field, why, fix) for a missing key variable of this deployment."""
    env = made.api_key_env
    if via:
        project = config.path.parent / PROJECT_FILE
        src = load_yaml(project) if project.exists() else None
        named = next(((key, src.line_of((key,))) for key in ("via_api_key_env", "via")
                      if src is not None and src.line_of((key,))), ("--via", None))
        return (str(project) if named[1] else None, named[1], named[0],
                f"certifying through the gateway {via} sends the gateway's key from it",
                f"export {env}=<the gateway's key> before running, or name the variable that "
                f"holds it with `via_api_key_env:` in {project}")
    loc = (*_loc(d), "api_key")
    line = config.source.line_of(loc)
    if d.api_key_env:
        return (str(config.path), line, f"{d.where}.litellm_params.api_key",
                f"deployment {d.group!r} reads its key from it (api_key: os.environ/{env})",
                f"export {env}=<your key> before running")
    return (str(config.path), config.source.line_of(_loc(d)) or d.line,
            f"{d.where}.litellm_params",
            f"deployment {d.group!r} names no api_key, so it is LiteLLM's default for its "
            "provider",
            f"export {env}=<your key> before running, or write `api_key: os.environ/<VARIABLE>` "
            "in its litellm_params")


def _timeout(params: Mapping[str, Any]) -> Timeout:
    read = params.get("timeout") or params.get("stream_timeout")
    try:
        return Timeout(read=float(read)) if read else Timeout()
    except (TypeError, ValueError, ValidationError):
        return Timeout()


def _tokenizer_for(model: str) -> str:
    """``model_info.tokenizer`` overrides this: cl100k_base ships offline (an approximation for
    models that use another encoding or whose tokenizer is not public)."""
    return "tiktoken:cl100k_base"


def _reachable(
    config: LiteLLMConfig, gateway: GatewaySource, group: str
) -> list[tuple[str, Origin]]:
    """(provider, origin) for the group's deployments, then every fallback reachable from it."""
    out: list[tuple[str, Origin]] = []
    path = str(config.path)
    for d in config.groups()[group]:
        out.append((gateway.provider_ids[d.index],
                    Origin(path, d.line, f"{d.where}: model group {group!r}", group)))
    seen, queue = {group}, [group]
    while queue:
        current = queue.pop(0)
        for entry in config.fallbacks:
            if entry.group != current:
                continue
            for i, target in enumerate(entry.fallbacks):
                out += [(pid, Origin(path, entry.lines[i], entry.field(i), target))
                        for pid in gateway.deployments_of(target)]
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        for default in config.default_fallbacks:
            for i, target in enumerate(default.groups):
                field_ = f"{default.section}.default_fallbacks[{i}]"
                out += [(pid, Origin(path, default.lines[i], field_, target))
                        for pid in gateway.deployments_of(target)]
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
    return out
