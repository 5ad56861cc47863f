"""The providers.yaml model: providers, per-contract failover chains, loading with precise errors.

::

    version: 1
    providers:
      openai-primary:
        kind: openai-chat                 # or anthropic-messages
        base_url: https://api.openai.com/v1   # the SDK's base_url; fake://<behaviour> offline
        model: gpt-4o-mini
        api_key_env: OPENAI_API_KEY       # the key itself never lives in this file
        temperature: 0
        max_output_tokens: 1024
        timeout: {connect: 5, read: 60}
        tokenizer: tiktoken:cl100k_base   # or hf:/path/to/tokenizer.json
        context_window: 128000
        headers: {x-team: billing, x-portkey-config: ${PORTKEY_CONFIG}}  # ${VAR}: from the env
    chains:
      invoice-extraction:                 # a contract id
        - {provider: openai-primary, failover: auto}
        - {provider: anthropic-fallback, failover: auto}   # auto | manual | off

Errors are :class:`~harness.domain.errors.ConfigError` naming the file, the line (from the YAML
node marks), the field and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.domain.errors import ConfigError
from harness.domain.fingerprint import canonical_json
from harness.domain.words import counted
from harness.providers.behaviours import Behaviour, BehaviourError
from harness.providers.secrets import secret_from_env
from harness.validation import explain
from harness.yamlsrc import compose_checked, line_of, read_config_text

ProviderKind = Literal["openai-chat", "anthropic-messages"]
FailoverMode = Literal["auto", "manual", "off"]

FAKE_SCHEME = "fake://"
SCHEMA_FILE = Path(__file__).with_name("providers.schema.json")
# Fields that change what a provider answers; a certification is valid for exactly these values.
HASHED_FIELDS = (
    "kind", "base_url", "model", "temperature", "max_output_tokens", "tokenizer", "context_window"
)
HEADER_ENV = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")  # a header value naming a variable
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
_INLINE_KEY_FIELDS = ("api_key", "apikey", "apiKey", "key", "api-key", "token", "secret")
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


class Timeout(BaseModel):
    """Seconds to wait: ``connect`` for the TCP/TLS connection, ``read`` for each read."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    connect: float = Field(default=5.0, gt=0, le=600,
                           description="Seconds to establish the connection.")
    read: float = Field(default=60.0, gt=0, le=3600,
                        description="Seconds to wait for response data.")


class ProviderConfig(BaseModel):
    """One provider endpoint: which wire format, where, which model, and how to call it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="The provider's name; in providers.yaml the mapping key (filled in for you).",
    )
    kind: ProviderKind = Field(description="The wire format: openai-chat or anthropic-messages.")
    base_url: str = Field(
        description="The official SDK's base_url (OpenAI: https://api.openai.com/v1; Anthropic: "
        "https://api.anthropic.com), or fake://<behaviour> for an in-process fake provider.",
    )
    model: str = Field(min_length=1, description="The model name sent in every request.")
    api_key_env: str | None = Field(
        None,
        description="Name of the environment variable that holds the API key (required unless "
        "base_url is fake://…). The key itself never goes in this file.",
    )
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    max_output_tokens: int = Field(default=1024, ge=1,
                                   description="max_tokens sent with each request.")
    timeout: Timeout = Field(default_factory=Timeout)
    tokenizer: str = Field(
        pattern=r"^(tiktoken:[A-Za-z0-9_]+|hf:.+)$",
        description="tiktoken:<encoding> (e.g. tiktoken:cl100k_base) or "
        "hf:<path/to/tokenizer.json>.",
    )
    context_window: int = Field(ge=1, description="The model's context window in tokens.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra HTTP headers sent with every request (a gateway's routing header, "
        "a team tag). A value may name environment variables as ${NAME}: they are read at run "
        "time and redacted like keys.",
    )
    via: str | None = Field(
        None,
        description="The gateway the requests travel through (its URL); base_url is then the "
        "gateway's address and `upstream` names the provider behind it.",
    )
    upstream: dict[str, str] | None = Field(
        None,
        description="Behind a gateway: the provider that should answer (kind, base_url, model). "
        "A failover-harness recording fake there lets certify check what the gateway sent.",
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        # Never echo the value: someone may have pasted the key itself here.
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the NAME of an environment variable (like OPENAI_API_KEY: capitals, "
                "digits, underscores), not the key itself"
            )
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an HTTP header name")
            if name.lower() in ("authorization", "x-api-key", "api-key"):
                raise ValueError(
                    f"header {name!r} carries the key: name its variable with api_key_env "
                    "instead (the key never goes in this file)")
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        if value.startswith(FAKE_SCHEME):
            try:
                Behaviour.parse(value[len(FAKE_SCHEME):])
            except BehaviourError as exc:
                raise ValueError(str(exc)) from None
            return value
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
            raise ValueError("must be an http(s):// URL such as https://api.openai.com/v1, "
                             "or fake://<behaviour> for a fake provider")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _consistent(self) -> ProviderConfig:
        if self.api_key_env is None and not self.is_fake:
            raise ValueError(
                "api_key_env is required for a real endpoint: name the environment variable "
                "that holds the key, e.g. api_key_env: OPENAI_API_KEY"
            )
        if self.kind == "anthropic-messages" and self.temperature > 1:
            raise ValueError("temperature must be between 0 and 1 for anthropic-messages")
        if self.max_output_tokens > self.context_window:
            raise ValueError("max_output_tokens cannot exceed context_window")
        return self

    @property
    def is_fake(self) -> bool:
        """True when ``base_url`` is ``fake://<behaviour>`` (answered in-process, offline)."""
        return self.base_url.startswith(FAKE_SCHEME)

    @property
    def fake_behaviour(self) -> Behaviour | None:
        """The behaviour of a ``fake://`` provider, else None."""
        return Behaviour.parse(self.base_url[len(FAKE_SCHEME):]) if self.is_fake else None

    def header_values(self, env: Mapping[str, str]) -> dict[str, str]:
        """The headers to send, each ``${NAME}`` replaced by its variable, registered for
        redaction like a key (ConfigError naming the header when a variable is not set)."""
        out = {}
        for name, value in self.headers.items():
            def read(match: re.Match[str], header: str = name) -> str:
                secret = secret_from_env(env, match.group(1))
                if secret is None:
                    raise ConfigError(
                        f"environment variable {match.group(1)} is not set (header {header!r} "
                        f"of provider {self.id!r} names it)",
                        field=f"providers.{self.id}.headers.{header}",
                        fix=f"export {match.group(1)}=<value> before running")
                return secret.reveal()
            out[name] = HEADER_ENV.sub(read, value)
        return out

    def header_env(self) -> list[str]:
        """The environment variables the headers name."""
        return [m.group(1) for v in self.headers.values() for m in HEADER_ENV.finditer(v)]

    def missing_key(self) -> ConfigError:
        """The error when the variable named by ``api_key_env`` is not set, at the file and line
        that ask for it (a source other than providers.yaml names its own: see
        harness.gateways.source)."""
        file, line = self._asked_at or (None, None)
        return ConfigError(
            f"environment variable {self.api_key_env} is not set (provider {self.id!r} needs it)",
            file=file, line=line, field=f"providers.{self.id}.api_key_env",
            fix=f"export {self.api_key_env}=<your key> before running, or point api_key_env at "
                "the variable that holds it",
        )

    # where providers.yaml names api_key_env (file, line): set by parse_providers
    _asked_at: tuple[str, int | None] | None = PrivateAttr(default=None)

    def hashed_fields(self) -> dict[str, Any]:
        """The behaviour-relevant fields (:data:`HASHED_FIELDS`) as plain JSON values."""
        data = self.model_dump(mode="json")
        fields = {name: data[name] for name in HASHED_FIELDS}
        if self.headers and not self.via:  # who answers (as written: ${NAME}, not its value)
            fields["headers"] = dict(sorted(self.headers.items()))
        return fields

    def config_hash(self) -> str:
        """SHA-256 of the RFC 8785 canonical JSON of :meth:`hashed_fields`.

        The id, the key's variable name and the timeouts are left out: renaming a provider or
        rotating where its key lives does not change what it answers.
        """
        return hashlib.sha256(canonical_json(self.hashed_fields())).hexdigest()


class ChainLink(BaseModel):
    """One link of a failover chain: a provider and how failover may reach it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    provider: str = Field(description="A provider id from `providers`.")
    failover: FailoverMode = Field(
        "auto",
        description="auto: failover may use it (if certified); manual: only after an operator "
        "approves; off: failover never uses it. The first link is the primary.",
    )


class ProviderSource(Protocol):
    """What a providers source other than providers.yaml (a gateway's config) knows about its
    providers: where each came from, in that file's terms. ``ProvidersFile.source`` is None for
    providers.yaml; :mod:`harness.gateways` fills it in for a gateway config."""

    name: str  # "LiteLLM", "Portkey"

    def where(self, provider: str, param: str | None = None) -> str:
        """``file:line (field)`` of the provider (or of its setting ``param``)."""
        ...

    def ineligible_fix(self, provider: str, contract: str, command: str) -> str: ...

    def reach_hint(self, provider: str, setting: str) -> str | None:
        """What to check when no call reached the provider (``setting``: key, model,
        upstream, address), or None for the generic advice."""
        ...

    def locate(self, standings: Sequence[Any]) -> list[Any]:
        """Standings whose reason names the file:line that brought the link in."""
        ...

    def missing_contract(self, contract: str, searched: Sequence[Path]) -> ConfigError: ...


class ProvidersFile(BaseModel):
    """The whole providers.yaml: the providers, and an ordered failover chain per contract."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    version: Literal[1] = 1
    providers: dict[str, ProviderConfig] = Field(min_length=1)
    chains: dict[str, list[ChainLink]] = Field(default_factory=dict)
    _source: ProviderSource | None = PrivateAttr(default=None)

    @property
    def source(self) -> ProviderSource | None:
        """The gateway config it was read from (None: providers.yaml)."""
        return self._source

    def with_source(self, source: ProviderSource) -> ProvidersFile:
        self._source = source
        return self

    @model_validator(mode="before")
    @classmethod
    def _fill_ids(cls, data: Any) -> Any:
        providers = data.get("providers") if isinstance(data, dict) else None
        if isinstance(providers, dict):
            filled = {}
            for key, value in providers.items():
                if isinstance(value, dict) and "id" not in value:
                    value = {"id": key, **value}
                filled[key] = value
            data = {**data, "providers": filled}
        return data

    @model_validator(mode="after")
    def _references(self) -> ProvidersFile:
        for key, provider in self.providers.items():
            if provider.id != key:
                raise ValueError(f"provider {key!r} has id {provider.id!r}; leave id out or match")
        return self

    def chain_for(self, contract_id: str) -> list[ChainLink]:
        """The failover chain of ``contract_id`` (ConfigError naming the fix if there is none)."""
        try:
            return self.chains[contract_id]
        except KeyError:
            raise ConfigError(
                f"no failover chain for contract {contract_id!r}",
                field=f"chains.{contract_id}",
                fix=f"add chains: {{{contract_id}: [{{provider: <id>, failover: auto}}]}}",
            ) from None


def providers_json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of providers.yaml, as published in ``providers.schema.json``."""
    schema = ProvidersFile.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://failover-harness.dev/schemas/providers.schema.json"
    schema["title"] = "failover-harness providers.yaml"
    provider = schema["$defs"]["ProviderConfig"]
    # In the file the id is the mapping key; the loader fills it in.
    provider["required"] = [name for name in provider["required"] if name != "id"]
    return schema


def write_json_schema(path: Path = SCHEMA_FILE) -> None:
    """Write :func:`providers_json_schema` to ``path`` (the shipped file is checked by a test)."""
    path.write_text(json.dumps(providers_json_schema(), indent=2, sort_keys=True) + "\n")


def load_providers(path: str | Path) -> ProvidersFile:
    """Read and validate providers.yaml; ConfigError with file, line, field and fix otherwise.

    A gateway's config (LiteLLM, Portkey) is read by :mod:`harness.gateways.sources`, which
    recognises the file and calls this one for providers.yaml.
    """
    path = Path(path)
    name = str(path)
    text = read_config_text(path, missing_fix="create it (see providers.yaml in the repository "
                            "for an example) or pass the right path")
    return parse_providers(text, source=name)


def parse_providers(text: str, *, source: str = "providers.yaml") -> ProvidersFile:
    """Validate providers.yaml ``text``; ``source`` names it in errors."""
    root, data = compose_checked(
        text, source, empty_fix="add `providers:` (see the example providers.yaml)"
    )
    if not isinstance(data, dict):
        raise ConfigError("the file must be a mapping with `providers:` and `chains:`",
                          file=source, line=line_of(root, ()),
                          fix="start with `providers:` (see the example providers.yaml)")
    _reject_inline_keys(root, data, source)
    try:
        parsed = ProvidersFile.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, root, source) from None
    _check_chains(parsed, root, source)
    for pid, cfg in parsed.providers.items():  # a missing key names the line that asks for it
        cfg._asked_at = (source, line_of(root, ("providers", pid, "api_key_env")))
    return parsed


def _reject_inline_keys(root: yaml.Node, data: dict[str, Any], source: str) -> None:
    providers = data.get("providers")
    if not isinstance(providers, dict):
        return
    for pid, body in providers.items():
        if not isinstance(body, dict):
            continue
        for field in _INLINE_KEY_FIELDS:
            if field in body:
                env = "ANTHROPIC_API_KEY" if body.get("kind") == "anthropic-messages" else (
                    "OPENAI_API_KEY")
                raise ConfigError(
                    "an API key written in providers.yaml is refused: keys come only from the "
                    "environment (the value is not shown here)",
                    file=source, line=line_of(root, ("providers", pid, field)),
                    field=f"providers.{pid}.{field}",
                    fix=f"delete `{field}:`, export the key as an environment variable "
                        f"(export {env}=…) and write `api_key_env: {env}`",
                )


def _config_error(exc: ValidationError, root: yaml.Node, source: str) -> ConfigError:
    # values are not repeated: a key pasted into the wrong field must not be printed
    errors = exc.errors(include_url=False)
    message, loc, fix = explain(ProvidersFile, errors, docs="docs/providers.md",
                                show_values=False)
    if len(errors) > 1:
        message += f" (and {counted(len(errors) - 1, 'more problem')} after this one)"
    field = ".".join(str(p) for p in loc) or "(file)"
    return ConfigError(message, file=source, line=line_of(root, loc), field=field, fix=fix)


def _check_chains(parsed: ProvidersFile, root: yaml.Node, source: str) -> None:
    for contract, chain in parsed.chains.items():
        if not chain:
            raise ConfigError("a failover chain needs at least one link",
                              file=source, line=line_of(root, ("chains", contract)),
                              field=f"chains.{contract}", fix="list the primary provider first")
        seen: set[str] = set()
        for i, link in enumerate(chain):
            loc = ("chains", contract, i, "provider")
            line, field = line_of(root, loc), ".".join(map(str, loc))
            if link.provider not in parsed.providers:
                known = ", ".join(sorted(parsed.providers))
                raise ConfigError(f"unknown provider {link.provider!r}", file=source, line=line,
                                  field=field, fix=f"use one of the providers above: {known}")
            if link.provider in seen:
                raise ConfigError(f"provider {link.provider!r} appears twice in this chain",
                                  file=source, line=line, field=field,
                                  fix="list each provider once per chain")
            seen.add(link.provider)


@cache
def shipped_json_schema() -> dict[str, Any]:
    """The published schema file shipped with the package."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
