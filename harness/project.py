"""``failover-harness.yaml``: the project file, so that CI runs a bare ``failover-harness check``.

Optional, beside ``providers.yaml`` (or named by ``check --project FILE``). It may hold what
``check`` would otherwise take on the command line; flags given on the command line win. Paths
are relative to the file's folder. Every error names the file, the line and the fix.

.. code-block:: yaml

    version: 1
    target: http://127.0.0.1:8080            # or a list of replica URLs
    target_profile: jobs.profile.yaml        # how the service's API maps onto the operations
    tokens_file: tokens.yaml                 # {token: owner}; or $HARNESS_TOKENS
    trials: 20                               # trials per arrival pattern for the detection suite
    scenarios: [scenarios, scenarios/detection]
    seed: 0
    report_dir: reports
    # a LiteLLM config as the providers source (docs/providers.md):
    contracts: {triage-fallback: ticket_triage}   # model group -> contract id
    via: http://127.0.0.1:4000                    # certify through the running gateway
    via_api_key_env: LITELLM_MASTER_KEY
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.yamlsrc import YamlSource, load_yaml

FILENAME = "failover-harness.yaml"
KEYS = ("version", "target", "target_profile", "tokens_file", "trials", "scenarios", "seed",
        "report_dir", "contracts", "via", "via_api_key_env", "headers")
MAX_TRIALS = 1000


@dataclass(frozen=True)
class Project:
    """What the project file says (None: not said). Paths are resolved against its folder."""

    path: Path | None = None
    target: str | None = None
    target_profile: Path | None = None
    tokens_file: Path | None = None
    trials: int | None = None
    scenarios: tuple[Path, ...] = field(default=())
    seed: int | None = None
    report_dir: Path | None = None
    contracts: dict[str, str] = field(default_factory=dict)  # LiteLLM model group -> contract
    via: str | None = None  # certify through the running gateway at this URL
    via_api_key_env: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # sent through the gateway (${NAME})


def find_project(explicit: Path | None, providers: Path) -> Path | None:
    """The project file to read: ``explicit``, else ``failover-harness.yaml`` beside the
    providers file, else none."""
    if explicit is not None:
        return explicit
    beside = providers.parent / FILENAME
    return beside if beside.is_file() else None


def load_project(path: Path | None) -> Project:
    """Read and validate the project file (none: an empty :class:`Project`)."""
    if path is None:
        return Project()
    src = load_yaml(path)
    if src.data is None:
        return Project(path=path)
    if not isinstance(src.data, dict):
        raise src.error("the project file must be a mapping of settings", fix=_example())
    for key in src.data:
        if key not in KEYS:
            raise src.error(f"unknown setting {key!r}", (str(key),),
                            fix=f"use one of: {', '.join(KEYS)}")
    version = src.data.get("version", 1)
    if version != 1:
        raise src.error(f"version {version!r} is not supported", ("version",),
                        fix="write version: 1")
    base = path.parent
    return Project(
        path=path,
        target=_target(src),
        target_profile=_path(src, "target_profile", base),
        tokens_file=_path(src, "tokens_file", base),
        trials=_int(src, "trials", 1, MAX_TRIALS),
        scenarios=_paths(src, "scenarios", base),
        seed=_int(src, "seed", 0, 2**63 - 1),
        report_dir=_path(src, "report_dir", base),
        contracts=_contracts(src),
        via=_via(src),
        via_api_key_env=_str(src, "via_api_key_env"),
        headers=_headers(src),
    )


def _example() -> str:
    return "write e.g.  target: http://127.0.0.1:8080  (see docs/results.md, 'The project file')"


def _target(src: YamlSource) -> str | None:
    value = src.data.get("target")
    if value is None:
        return None
    urls = value if isinstance(value, list) else [value]
    if urls and all(isinstance(v, str) and v.strip() for v in urls):
        for n, url in enumerate(urls):
            if not url.strip().startswith(("http://", "https://")):
                where: tuple[str | int, ...] = ("target", n) if isinstance(value, list) \
                    else ("target",)
                raise src.error(f"{url!r} is not your service's base URL", where,
                                fix="write target: http://host:port (the service the scenarios "
                                "attack; a list of URLs for replicas)")
        return ",".join(u.strip() for u in urls)
    raise src.error("target must be a URL or a list of replica URLs", ("target",),
                    fix="write target: http://host:port (or a list of them)")


def _path(src: YamlSource, key: str, base: Path) -> Path | None:
    value = src.data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise src.error(f"{key} must be a path", (key,),
                        fix=f"write {key}: <path relative to this file>")
    return _join(base, value)


def _paths(src: YamlSource, key: str, base: Path) -> tuple[Path, ...]:
    value: Any = src.data.get(key)
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise src.error(f"{key} must be a path or a list of paths", (key,),
                        fix=f"write {key}: [scenarios, scenarios/detection]")
    paths = tuple(_join(base, v) for v in items)
    for n, path in enumerate(paths):
        if not path.exists():
            raise src.error(f"{path} does not exist", (key, n) if isinstance(value, list)
                            else (key,), fix="paths are relative to this file; name a scenario "
                            "file or a folder of them (or leave scenarios out: the shipped ones)")
    return paths


def _join(base: Path, value: str) -> Path:
    """``value`` relative to the project file's folder, ``..`` folded (commands stay short)."""
    return Path(os.path.normpath(base / value))


def _contracts(src: YamlSource) -> dict[str, str]:
    value = src.data.get("contracts")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise src.error("`contracts` maps each model group to a contract id", ("contracts",),
                        fix="write contracts: {my-model-group: my_contract}")
    return {str(k): v for k, v in value.items()}


def _headers(src: YamlSource) -> dict[str, str]:
    value = src.data.get("headers")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise src.error("`headers` maps header names to values", ("headers",),
                        fix='write headers: {x-portkey-config: "${PORTKEY_CONFIG}"} (${NAME} '
                            "reads a variable)")
    return {str(k): v for k, v in value.items()}


def _via(src: YamlSource) -> str | None:
    value = src.data.get("via")
    if value is not None and (not isinstance(value, str)
                              or not value.startswith(("http://", "https://"))):
        raise src.error("`via` is the gateway's URL", ("via",),
                        fix="write via: http://127.0.0.1:4000 (where the LiteLLM proxy listens)")
    return value


def _str(src: YamlSource, key: str) -> str | None:
    value = src.data.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise src.error(f"{key} must be a name", (key,), fix=f"write {key}: MY_VARIABLE")
    return value


def _int(src: YamlSource, key: str, low: int, high: int) -> int | None:
    value = src.data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise src.error(f"{key} must be a whole number from {low} to {high}, not {value!r}",
                        (key,), fix=f"write {key}: {max(low, 1)}")
    return value
