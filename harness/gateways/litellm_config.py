"""Read a LiteLLM proxy ``config.yaml``: its deployments and every fallback list, with lines.

::

    model_list:
      - model_name: triage                       # the model group clients address
        litellm_params:
          model: openai/gpt-4o-mini              # provider prefix / model
          api_base: https://api.openai.com/v1
          api_key: os.environ/OPENAI_API_KEY     # only the variable's NAME is kept
          temperature: 0
    router_settings:
      fallbacks: [{triage: [triage-fallback]}]   # also context_window_fallbacks,
    litellm_settings:                            # content_policy_fallbacks, default_fallbacks
      fallbacks: [...]

Pure reading: nothing here decides a verdict. Every error is a :class:`ConfigError` naming the
LiteLLM file and line (``harness.yamlsrc``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.yamlsrc import YamlSource, load_yaml

LITELLM_PREFIX = "litellm:"
# Where LiteLLM reads fallback lists, in the order the router tries them.
FALLBACK_SECTIONS = ("router_settings", "litellm_settings")
FALLBACK_KINDS = ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
ENV_REF = "os.environ/"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# litellm_params that say how to reach or pace a deployment, not what it answers.
TRANSPORT_PARAMS = frozenset({
    "model", "api_base", "base_url", "api_key", "timeout", "stream_timeout", "max_retries",
    "rpm", "tpm", "organization", "num_retries", "cooldown_time",
})
# litellm_settings that change the request the provider receives.
REQUEST_SETTINGS = ("drop_params", "modify_params", "additional_drop_params")


@dataclass(frozen=True, slots=True)
class LiteLLMDeployment:
    """One entry of ``model_list``."""

    index: int  # position in model_list
    group: str  # model_name: what clients (and fallback lists) address
    model: str  # litellm_params.model, e.g. openai/gpt-4o-mini
    api_base: str | None
    api_key_env: str | None  # the NAME from ``os.environ/NAME``
    api_key_literal: bool  # a key written in the file (never read, never shown)
    params: dict[str, Any]  # every other litellm_params entry
    model_info: dict[str, Any]
    line: int | None

    @property
    def where(self) -> str:
        return f"model_list[{self.index}]"


@dataclass(frozen=True, slots=True)
class FallbackEntry:
    """One ``{group: [fallback, …]}`` of one fallback list."""

    section: str  # router_settings | litellm_settings
    kind: str  # fallbacks | context_window_fallbacks | content_policy_fallbacks
    position: int  # index in the list
    group: str
    fallbacks: tuple[str, ...]
    lines: tuple[int | None, ...]  # one per fallback
    line: int | None  # the entry's line

    def loc(self, i: int | None = None) -> tuple[str | int, ...]:
        base: tuple[str | int, ...] = (self.section, self.kind, self.position, self.group)
        return base if i is None else (*base, i)

    def field(self, i: int | None = None) -> str:
        text = f"{self.section}.{self.kind}[{self.position}].{self.group}"
        return text if i is None else f"{text}[{i}]"


@dataclass(frozen=True, slots=True)
class DefaultFallbacks:
    """``default_fallbacks: [group, …]``: tried for every group that has no list of its own."""

    section: str
    groups: tuple[str, ...]
    lines: tuple[int | None, ...]


@dataclass
class LiteLLMConfig:
    """A LiteLLM proxy config as failover-harness needs it."""

    source: YamlSource
    deployments: list[LiteLLMDeployment]
    fallbacks: list[FallbackEntry] = field(default_factory=list)
    default_fallbacks: list[DefaultFallbacks] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # REQUEST_SETTINGS present

    @property
    def path(self) -> Path:
        return self.source.path

    def groups(self) -> dict[str, list[LiteLLMDeployment]]:
        out: dict[str, list[LiteLLMDeployment]] = {}
        for d in self.deployments:
            out.setdefault(d.group, []).append(d)
        return out

    def where(self, loc: tuple[str | int, ...]) -> str:
        """``config.yaml:12`` for ``loc``."""
        line = self.source.line_of(loc)
        return f"{self.path}:{line}" if line else str(self.path)


def strip_prefix(path: str | Path) -> tuple[Path, bool]:
    """``litellm:config.yaml`` → (``config.yaml``, True); other paths unchanged, False."""
    text = str(path)
    if text.startswith(LITELLM_PREFIX):
        return Path(text[len(LITELLM_PREFIX):]), True
    return Path(text), False


def looks_like_litellm(data: Any) -> bool:
    """Detection by shape: a mapping with ``model_list`` and no ``providers``."""
    return isinstance(data, Mapping) and "model_list" in data and "providers" not in data


def read_litellm_config(path: str | Path, source: YamlSource | None = None) -> LiteLLMConfig:
    """Parse ``path`` (``litellm:`` prefix allowed); ConfigError at file:line when it is wrong."""
    path, _ = strip_prefix(path)
    src = source or load_yaml(path)
    data = src.data
    if not isinstance(data, Mapping) or "model_list" not in data:
        raise src.error(
            "not a LiteLLM proxy config: there is no `model_list`", (),
            fix="point --providers at the config.yaml your LiteLLM proxy runs with (it lists "
                "`model_list:`), or at a providers.yaml",
        )
    models = data["model_list"]
    if not isinstance(models, list) or not models:
        raise src.error("`model_list` must be a non-empty list of deployments", ("model_list",),
                        fix="list each deployment as `- model_name: …` with `litellm_params:`")
    deployments = [_deployment(src, i, item) for i, item in enumerate(models)]
    config = LiteLLMConfig(src, deployments)
    groups = config.groups()
    for section in FALLBACK_SECTIONS:
        block = data.get(section)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise src.error(f"`{section}` must be a mapping", (section,),
                            fix=f"write `{section}:` followed by indented settings")
        for kind in FALLBACK_KINDS:
            if block.get(kind) is not None:
                config.fallbacks += _fallback_list(src, section, kind, block[kind], groups)
        if block.get("default_fallbacks") is not None:
            config.default_fallbacks.append(
                _default_fallbacks(src, section, block["default_fallbacks"], groups))
        for name in REQUEST_SETTINGS:
            if name in block and section == "litellm_settings":
                config.settings[name] = block[name]
    return config


def _deployment(src: YamlSource, i: int, item: Any) -> LiteLLMDeployment:
    loc: tuple[str | int, ...] = ("model_list", i)
    if not isinstance(item, Mapping):
        raise src.error("a deployment must be a mapping with `model_name` and `litellm_params`",
                        loc, fix="write `- model_name: <group>` and an indented `litellm_params:`")
    group = item.get("model_name")
    if not isinstance(group, str) or not group:
        raise src.error("the deployment has no `model_name`", loc,
                        fix="add `model_name: <the model group clients ask for>`")
    params = item.get("litellm_params")
    if not isinstance(params, Mapping):
        raise src.error(f"deployment {group!r} has no `litellm_params` mapping", loc,
                        fix="add `litellm_params:` with at least `model: <provider>/<model>`")
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise src.error(f"deployment {group!r} has no `litellm_params.model`",
                        (*loc, "litellm_params"),
                        fix="add `model: openai/<model>` (or anthropic/…)")
    api_base = params.get("api_base", params.get("base_url"))
    if api_base is not None and not isinstance(api_base, str):
        raise src.error("`api_base` must be a URL", (*loc, "litellm_params", "api_base"),
                        fix="write the provider's base URL, e.g. https://api.openai.com/v1")
    env, literal = _api_key(src, (*loc, "litellm_params", "api_key"), params.get("api_key"))
    info = item.get("model_info")
    return LiteLLMDeployment(
        index=i, group=group, model=model,
        api_base=api_base.rstrip("/") if isinstance(api_base, str) else None,
        api_key_env=env, api_key_literal=literal,
        params={k: v for k, v in params.items() if k not in ("model", "api_base", "base_url",
                                                             "api_key")},
        model_info=dict(info) if isinstance(info, Mapping) else {},
        line=src.line_of(loc),
    )


def _api_key(src: YamlSource, loc: tuple[str | int, ...], value: Any) -> tuple[str | None, bool]:
    """``os.environ/NAME`` → NAME. The value of a literal key is never kept or shown."""
    if value is None:
        return None, False
    if isinstance(value, str) and value.startswith(ENV_REF):
        name = value[len(ENV_REF):]
        if not _ENV_NAME.fullmatch(name):
            raise src.error("`api_key: os.environ/…` must name an environment variable", loc,
                            fix="write api_key: os.environ/OPENAI_API_KEY (the variable's name)")
        return name, False
    return None, True


def _fallback_list(
    src: YamlSource, section: str, kind: str, value: Any,
    groups: Mapping[str, list[LiteLLMDeployment]],
) -> list[FallbackEntry]:
    loc: tuple[str | int, ...] = (section, kind)
    if not isinstance(value, list):
        raise src.error(f"`{section}.{kind}` must be a list of {{group: [fallbacks]}}", loc,
                        fix=f"write {kind}: [{{my-group: [my-fallback-group]}}]")
    entries = []
    for position, item in enumerate(value):
        if not isinstance(item, Mapping) or not item:
            raise src.error("each fallback entry is a mapping {group: [fallback groups]}",
                            (*loc, position), fix="write - my-group: [my-fallback-group]")
        for group, targets in item.items():
            entry_loc = (*loc, position, str(group))
            if str(group) not in groups:
                raise src.error(
                    f"fallbacks for {group!r}, which is no model_name in model_list", entry_loc,
                    fix=f"use one of the model groups: {', '.join(sorted(groups))}",
                )
            if isinstance(targets, str):  # LiteLLM refuses to start with it (validate_fallbacks)
                raise src.error(
                    f"the fallbacks of {group!r} are the string {targets!r}, not a list: LiteLLM "
                    f"refuses to start (\"Fallbacks for {group!r} must be a list of model names\")",
                    entry_loc, fix=f"write {group}: [{targets}]")
            if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
                raise src.error(f"the fallbacks of {group!r} must be a list of model groups",
                                entry_loc, fix=f"write {group}: [fallback-group, …]")
            lines = []
            for i, target in enumerate(targets):
                if target not in groups:
                    raise src.error(
                        f"fallback {target!r} of {group!r} is no model_name in model_list",
                        (*entry_loc, i),
                        fix=f"use one of the model groups: {', '.join(sorted(groups))}",
                    )
                lines.append(src.line_of((*entry_loc, i)))
            entries.append(FallbackEntry(section, kind, position, str(group), tuple(targets),
                                         tuple(lines), src.line_of(entry_loc)))
    return entries


def _default_fallbacks(
    src: YamlSource, section: str, value: Any, groups: Mapping[str, list[LiteLLMDeployment]],
) -> DefaultFallbacks:
    loc: tuple[str | int, ...] = (section, "default_fallbacks")
    if isinstance(value, str):  # LiteLLM refuses to start with it, like a string fallback
        raise src.error(
            f"`default_fallbacks` is the string {value!r}, not a list: LiteLLM refuses to start "
            '("default_fallbacks must be a list of model names")', loc,
            fix=f"write default_fallbacks: [{value}]",
        )
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise src.error("`default_fallbacks` must be a list of model groups", loc,
                        fix="write default_fallbacks: [my-fallback-group]")
    for i, group in enumerate(value):
        if group not in groups:
            raise src.error(f"default fallback {group!r} is no model_name in model_list",
                            (*loc, i), fix=f"use one of: {', '.join(sorted(groups))}")
    return DefaultFallbacks(section, tuple(value),
                            tuple(src.line_of((*loc, i)) for i in range(len(value))))
