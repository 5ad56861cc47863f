"""Read a drill profile: a target profile's ``drill:`` section, or a drill-only file (a gateway),
checked at file:line with the fix; then resolved against the environment (``${VAR}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.domain.errors import ConfigError
from harness.domain.redaction import register_secret
from harness.target.drill_section import (
    ENV_REF,
    DrillFile,
    DrillProvider,
    DrillSection,
    interpolate,
    is_loopback,
)
from harness.target.errors import explain
from harness.target.model import load_profile
from harness.yamlsrc import YamlSource, load_yaml

DOCS = "see docs/drill.md, The profile"


@dataclass(frozen=True, slots=True)
class Upstream:
    """A provider of the profile, resolved: where its fake listens."""

    name: str
    kind: str  # openai-chat | anthropic-messages
    role: str  # primary | fallback
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class DrillProfile:
    """A loaded drill profile (the file it came from, for error lines and the re-drill command)."""

    name: str
    section: DrillSection
    source: YamlSource | None = None
    #: headers every request to the target carries besides the profile's (``--header``)
    extra_headers: Mapping[str, str] | None = None

    @property
    def path(self) -> str:
        return str(self.source.path) if self.source is not None else "(built in code)"

    def error(self, message: str, loc: tuple[str | int, ...], fix: str) -> ConfigError:
        if self.source is None:
            return ConfigError(message, field=".".join(map(str, loc)), fix=fix)
        return self.source.error(message, loc, fix=fix)

    def upstreams(self, env: Mapping[str, str], ports: Mapping[str, int] | None = None
                  ) -> list[Upstream]:
        """The providers with ``${VAR}`` read from ``env``; ``ports`` (name → port) overrides."""
        out = []
        for i, p in enumerate(self.section.providers):
            loc: tuple[str | int, ...] = ("drill", "providers", i)
            host = interpolate(p.host, env, src=self.source, loc=(*loc, "host"))
            if not is_loopback(host):
                raise self.error(f"host {host!r} is not a loopback address", (*loc, "host"),
                                 "write host: 127.0.0.1: the drill answers in place of the "
                                 "provider, on this machine")
            port = _port(self, p, env, (*loc, "port")) if not ports or p.name not in ports \
                else ports[p.name]
            out.append(Upstream(p.name, p.kind, p.role, host, port))
        return out

    def headers(self, env: Mapping[str, str], which: str = "submit") -> dict[str, str]:
        """A request's headers with ``${VAR}`` filled in (values are secrets: never print)."""
        part: Any = self.section.submit if which == "submit" else self.section.observe
        out = {k: interpolate(v, env, src=self.source, loc=("drill", which, "headers", k))
               for k, v in (part.headers if part is not None else {}).items()}
        for k, v in (part.headers if part is not None else {}).items():
            for name in ENV_REF.findall(v):  # a value from ${VAR} is a secret: never shown
                register_secret(env.get(name, ""))
                register_secret(out[k])
        for k, v in (self.extra_headers or {}).items():  # replaces a header of the same name
            out = {n: w for n, w in out.items() if n.lower() != k.lower()}
            out[k] = interpolate(v, env, src=None, loc=("--header", k))
            register_secret(out[k])  # a value given on the command line is never shown
        return out


def _port(profile: DrillProfile, p: DrillProvider, env: Mapping[str, str],
          loc: tuple[str | int, ...]) -> int:
    if isinstance(p.port, int):
        return p.port
    text = interpolate(p.port, env, src=profile.source, loc=loc)
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise profile.error(f"{p.port} is {text!r}, not a port", loc,
                            f"export {p.port[2:-1]}=<a free port>")
    return int(text)


def profile_from(name: str, section: Any, where: str) -> DrillProfile:
    """A drill profile from data another config filled in (a gateway's: ``where`` names it in
    errors)."""
    try:
        checked = DrillSection.model_validate(section)
    except ValidationError as exc:
        message, loc, fix = explain(DrillSection, exc.errors())
        raise ConfigError(f"the drill profile filled in from {where}: {message}",
                          field=".".join(map(str, loc)), fix=fix) from None
    return DrillProfile(name, checked, None)


def load_drill(path: str | Path) -> DrillProfile:
    """The profile's drill section (ConfigError at file:line with the fix). A profile with
    ``operations:`` is a whole target profile and is validated as one."""
    src = load_yaml(Path(path))
    if not isinstance(src.data, dict):
        raise src.error("a target profile must be a YAML mapping",
                        fix=f"start with name: and drill: ({DOCS})")
    if "drill" not in src.data:
        raise src.error("the profile has no drill: section",
                        fix=f"add drill: with submit:, observe:, providers: and timeouts: ({DOCS})")
    if "operations" in src.data or "capabilities" in src.data:
        profile = load_profile(path)
        name, section = profile.name, profile.drill
    else:
        try:
            loaded = DrillFile.model_validate(src.data)
        except ValidationError as exc:
            message, loc, fix = explain(DrillFile, exc.errors())
            raise src.error(message, loc, fix=fix) from None
        name, section = loaded.name, loaded.drill
    assert section is not None
    check_section(src, section)
    return DrillProfile(name, section, src)


def check_section(src: YamlSource, drill: DrillSection) -> None:
    """What one field's validator cannot see: the fields that go together."""
    if drill.submit.kind == "create_job" and drill.observe is None:
        raise src.error("observe: is missing: a create_job service is watched through its "
                        "get_job", ("drill",), fix="add observe: {path: /jobs/{job_id}, "
                        f"statuses: {{succeeded: [done]}}}} ({DOCS})")
    if not any(p.role == "primary" for p in drill.providers):
        raise src.error("no provider has role: primary", ("drill", "providers"),
                        fix="mark the provider the service calls first with role: primary")
    hedge = drill.policy.hedge
    if hedge.allowed and hedge.after_s is None:
        raise src.error("hedge.allowed needs after_s", ("drill", "policy", "hedge"),
                        fix="write hedge: {allowed: true, after_s: 0.5} (when the second call "
                        "may start)")
    names: set[str] = set()
    for i, p in enumerate(drill.providers):
        if p.name in names:
            raise src.error(f"two providers are named {p.name!r}", ("drill", "providers", i),
                            fix="give each provider its own name")
        names.add(p.name)
        if not is_loopback(p.host) and not ENV_REF.fullmatch(p.host):
            raise src.error(f"host {p.host!r} is not a loopback address: the drill answers in "
                            "place of the provider, on this machine",
                            ("drill", "providers", i, "host"),
                            fix="write host: 127.0.0.1 and point the service's base URL there")
