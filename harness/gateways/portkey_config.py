"""Read a Portkey gateway config (JSON): its targets, in the order the gateway tries them, with
lines.

::

    {
      "strategy": {"mode": "fallback", "on_status_codes": [429, 500, 503]},
      "retry": {"attempts": 2, "on_status_codes": [429]},
      "request_timeout": 20000,
      "targets": [
        {"provider": "openai", "custom_host": "https://api.openai.com/v1",
         "override_params": {"model": "gpt-4o-mini", "temperature": 0}},
        {"strategy": {"mode": "loadbalance"}, "targets": [
          {"provider": "anthropic", "weight": 0.5,
           "override_params": {"model": "claude-3-5-haiku-20241022"}},
          ...]}
      ]
    }

A config with no ``targets`` is one target itself. ``override_params``, ``retry`` and
``request_timeout`` are inherited by nested targets (a target's own win). Pure reading: nothing
here decides a verdict. Every error is a :class:`ConfigError` naming the file and line
(:func:`harness.contracts.jsonpos.json_lines`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.contracts.jsonpos import json_lines
from harness.domain.errors import ConfigError

PORTKEY_PREFIX = "portkey:"
MODES = ("fallback", "loadbalance", "single", "conditional")
SUPPORTED_MODES = ("fallback", "loadbalance", "single")
TARGET_KEYS = frozenset({
    "provider", "custom_host", "api_key", "virtual_key", "override_params", "weight", "retry",
    "request_timeout", "strategy", "targets", "name", "cache", "forward_headers",
    "on_status_codes", "default_input_guardrails", "default_output_guardrails", "id",
})
# Keys only a Portkey config has at its top level (detection by shape)
_SHAPE = ("targets", "strategy", "custom_host", "override_params", "virtual_key")

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class PortkeyTarget:
    """One leaf target: where it sends, what it overrides, and its place in the routing."""

    loc: Loc  # JSON path of the target, e.g. ("targets", 1, "targets", 0)
    provider: str
    custom_host: str | None
    api_key: str | None  # written in the file: sent to the gateway only, never shown
    override_params: dict[str, Any]  # inherited, then its own
    retry: dict[str, Any]
    request_timeout_ms: int | None
    role: str  # primary | fallback | loadbalance
    order: int  # the gateway's order of trying (0: first)
    weight: float | None
    on_status_codes: tuple[int, ...]  # of the fallback strategy that holds it
    line: int | None
    lines: dict[str, int | None] = field(default_factory=dict)  # override param -> its line

    @property
    def where(self) -> str:
        """``targets[1].targets[0]`` (or ``(config)`` for a one-target config)."""
        out = ""
        for part in self.loc:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out or "(config)"


@dataclass
class PortkeyConfig:
    path: Path
    data: dict[str, Any]
    lines: dict[Loc, int]
    targets: list[PortkeyTarget]

    def line_of(self, loc: Loc) -> int | None:
        return self.lines.get(loc)

    def error(self, message: str, loc: Loc, fix: str) -> ConfigError:
        field_ = ".".join(str(p) for p in loc) or "(config)"
        return ConfigError(message, file=str(self.path), line=self.line_of(loc) or 1,
                           field=field_, fix=fix)


def looks_like_portkey(data: Any) -> bool:
    """Detection by shape: a JSON object with Portkey's keys and no ``providers``."""
    return isinstance(data, Mapping) and "providers" not in data and (
        any(k in data for k in _SHAPE) or ("provider" in data and "model_list" not in data))


def read_portkey_config(path: str | Path) -> PortkeyConfig:
    """Parse ``path`` (``portkey:`` prefix allowed); ConfigError at file:line when it is wrong."""
    path = Path(str(path).removeprefix(PORTKEY_PREFIX))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", file=str(path),
                          fix="pass the path of the Portkey config (portkey:config.json)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", file=str(path)) from None
    return parse_portkey_config(text, path)


def parse_portkey_config(text: str, path: Path) -> PortkeyConfig:
    """A Portkey config from its JSON ``text`` (a file's, or a ``x-portkey-config`` header's);
    ``path`` names it in errors."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno,
                          fix="correct the JSON at that line") from None
    config = PortkeyConfig(path, data, json_lines(text), [])
    if not isinstance(data, dict):
        raise config.error("a Portkey config is a JSON object", (),
                           fix='start with {"strategy": {"mode": "fallback"}, "targets": [...]}')
    _walk(config, data, (), inherited={}, role="primary", order=[0], codes=())
    if not config.targets:
        raise config.error("the config has no target", (),
                           fix='add "targets": [{"provider": "openai", ...}]')
    return config


def _walk(config: PortkeyConfig, node: Any, loc: Loc, *, inherited: dict[str, Any], role: str,
          order: list[int], codes: tuple[int, ...]) -> None:
    if not isinstance(node, dict):
        raise config.error("a target is a JSON object", loc,
                           fix='write {"provider": "openai", "override_params": {...}}')
    unknown = sorted(set(node) - TARGET_KEYS)
    if unknown:
        raise config.error(f"unknown key {unknown[0]!r} in a Portkey target", (*loc, unknown[0]),
                           fix=f"use the keys Portkey knows: {', '.join(sorted(TARGET_KEYS))}")
    merged = _inherit(config, node, loc, inherited)
    if "targets" not in node:
        config.targets.append(_leaf(config, node, loc, merged, role, order[0], codes))
        order[0] += 1
        return
    targets = node["targets"]
    if not isinstance(targets, list) or not targets:
        raise config.error("`targets` is a non-empty list", (*loc, "targets"),
                           fix="list at least one target")
    mode, on_codes = _strategy(config, node, loc)
    for i, child in enumerate(targets):
        child_role = ("loadbalance" if mode == "loadbalance" else
                      role if i == 0 or mode == "single" else "fallback")
        _walk(config, child, (*loc, "targets", i), inherited=merged, role=child_role,
              order=order, codes=on_codes if mode == "fallback" else codes)
        if mode == "single":
            break  # "single": only the first target is ever used


def _strategy(config: PortkeyConfig, node: dict[str, Any], loc: Loc) -> tuple[str, tuple[int, ...]]:
    strategy = node.get("strategy")
    if not isinstance(strategy, dict) or "mode" not in strategy:
        raise config.error("a config with `targets` needs `strategy.mode`", (*loc, "strategy")
                           if "strategy" in node else (*loc, "targets"),
                           fix='add "strategy": {"mode": "fallback"} (or "loadbalance")')
    mode = strategy["mode"]
    if mode not in SUPPORTED_MODES:
        known = "unknown" if mode not in MODES else "not supported by failover-harness"
        raise config.error(f"strategy mode {mode!r} is {known}", (*loc, "strategy", "mode"),
                           fix=f"use one of: {', '.join(SUPPORTED_MODES)}")
    codes = strategy.get("on_status_codes", ())
    if not isinstance(codes, list | tuple) or not all(
            isinstance(c, int) and 100 <= c <= 599 for c in codes):
        raise config.error("`on_status_codes` is a list of HTTP status codes",
                           (*loc, "strategy", "on_status_codes"), fix="write [429, 500, 503]")
    return str(mode), tuple(codes)


def _inherit(config: PortkeyConfig, node: dict[str, Any], loc: Loc,
             inherited: dict[str, Any]) -> dict[str, Any]:
    """override_params / retry / request_timeout as this node sees them (with their lines)."""
    merged = {"override_params": dict(inherited.get("override_params", {})),
              "param_lines": dict(inherited.get("param_lines", {})),
              "retry": inherited.get("retry", {}),
              "request_timeout": inherited.get("request_timeout")}
    params = node.get("override_params", {})
    if not isinstance(params, dict):
        raise config.error("`override_params` is an object", (*loc, "override_params"),
                           fix='write "override_params": {"model": "...", "temperature": 0}')
    for key, value in params.items():
        merged["override_params"][key] = value
        merged["param_lines"][key] = config.line_of((*loc, "override_params", key))
    retry = node.get("retry")
    if retry is not None:
        if not isinstance(retry, dict) or not isinstance(retry.get("attempts", 0), int):
            raise config.error("`retry` is {\"attempts\": N, \"on_status_codes\": [...]}",
                               (*loc, "retry"), fix='write "retry": {"attempts": 2}')
        merged["retry"] = retry
    timeout = node.get("request_timeout")
    if timeout is not None:
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            raise config.error("`request_timeout` is a positive number of milliseconds",
                               (*loc, "request_timeout"), fix='write "request_timeout": 10000')
        merged["request_timeout"] = timeout
    return merged


def _leaf(config: PortkeyConfig, node: dict[str, Any], loc: Loc, merged: dict[str, Any],
          role: str, order: int, codes: tuple[int, ...]) -> PortkeyTarget:
    provider = node.get("provider")
    if not isinstance(provider, str) or not provider:
        what = ("a virtual key needs Portkey's hosted service" if "virtual_key" in node
                else "a target needs `provider`")
        raise config.error(what, (*loc, "provider") if "provider" in node else loc,
                           fix='write "provider": "openai" (or "anthropic"), with '
                               '"custom_host" for another address')
    host = node.get("custom_host")
    if host is not None and (not isinstance(host, str) or not host.startswith(("http://",
                                                                               "https://"))):
        raise config.error("`custom_host` is an http(s) URL", (*loc, "custom_host"),
                           fix='write "custom_host": "https://host/v1"')
    weight = node.get("weight")
    return PortkeyTarget(
        loc=loc, provider=provider, custom_host=host.rstrip("/") if host else None,
        api_key=node.get("api_key") if isinstance(node.get("api_key"), str) else None,
        override_params=merged["override_params"], retry=dict(merged["retry"]),
        request_timeout_ms=merged["request_timeout"], role=role, order=order,
        weight=float(weight) if isinstance(weight, int | float) else None,
        on_status_codes=codes, line=config.line_of(loc) or 1,
        lines=merged["param_lines"],
    )


def target_config(target: PortkeyTarget) -> dict[str, Any]:
    """The one-target Portkey config that routes a request to ``target`` alone (what a
    certification through the gateway sends as ``x-portkey-config``)."""
    out: dict[str, Any] = {"provider": target.provider}
    for key, value in (("custom_host", target.custom_host), ("api_key", target.api_key),
                       ("request_timeout", target.request_timeout_ms)):
        if value is not None:
            out[key] = value
    if target.override_params:
        out["override_params"] = target.override_params
    if target.retry:
        out["retry"] = target.retry
    return out
