"""YAML documents that remember where each value came from, so errors can name the line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.domain.errors import ConfigError


@dataclass(frozen=True, slots=True)
class YamlSource:
    """A parsed YAML file: its data, and its node tree for looking up line numbers."""

    path: Path
    data: Any
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """1-based line of the value at ``loc`` (or of its nearest existing parent)."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for key in loc:
            if isinstance(node, yaml.MappingNode):
                found = None
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                        found = (k, v)
                        break
                if found is None:
                    return line
                line = found[0].start_mark.line + 1
                node = found[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    return line
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def error(self, message: str, loc: tuple[str | int, ...] = (), *, fix: str) -> ConfigError:
        """A :class:`ConfigError` pointing at ``loc`` in this file."""
        field = ".".join(str(p) for p in loc) or None
        line = self.line_of(loc)
        return ConfigError(message, file=str(self.path), line=line, field=field, fix=fix)


def load_yaml(path: Path) -> YamlSource:
    """Read and parse ``path``; a missing file or a syntax error is a :class:`ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "file not found", file=str(path), fix="create it, or point the option at the right path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the file: {exc}", file=str(path), fix="save it as UTF-8 text"
        ) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            f"not valid YAML: {problem}", file=str(path), line=line, fix="fix the YAML syntax"
        ) from None
    return YamlSource(path=path, data=data, root=root)
