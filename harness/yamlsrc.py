"""YAML that remembers where each value came from, so a config error can name the line.

One parse gives both the node tree and the plain data; duplicate mapping keys are an error
(PyYAML would silently keep the last one). Used by every file loader: providers.yaml,
contracts, scenarios and target profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.domain.errors import ConfigError


def compose_checked(
    text: str, source: str, *, empty_fix: str | None = None
) -> tuple[yaml.Node, Any]:
    """The node tree and the plain data of one YAML document; ConfigError on bad YAML."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise ConfigError("the file is empty", file=source, line=1,
                              fix=empty_fix or "write the document (see the docs/ example)")
        _check_duplicates(root, source)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or "invalid YAML"
        raise ConfigError(f"not valid YAML: {problem}", file=source, line=line,
                          fix="check the indentation and quoting on that line") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", file=source) from None
    finally:
        loader.dispose()
    return root, data


def _check_duplicates(node: yaml.Node, source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise ConfigError(
                        f"duplicate key {key.value!r} (first on line {seen[key.value]})",
                        file=source, line=key.start_mark.line + 1, field=str(key.value),
                        fix="keep one of them: YAML would silently drop the first",
                    )
                seen[key.value] = key.start_mark.line + 1
            _check_duplicates(value, source)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(item, source)


def line_of(root: yaml.Node | None, loc: Sequence[Any]) -> int | None:
    """1-based line of the deepest node along ``loc`` (a key's line for a mapping entry)."""
    if root is None:
        return None
    node, line = root, root.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node, line = value, key.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


@dataclass(frozen=True, slots=True)
class YamlSource:
    """A parsed YAML file: its data, and its node tree for looking up line numbers."""

    path: Path
    data: Any
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """1-based line of the value at ``loc`` (or of its nearest existing parent)."""
        return line_of(self.root, loc)

    def error(self, message: str, loc: tuple[str | int, ...] = (), *, fix: str) -> ConfigError:
        """A :class:`ConfigError` pointing at ``loc`` in this file."""
        field = ".".join(str(p) for p in loc) or None
        return ConfigError(message, file=str(self.path), line=self.line_of(loc), field=field,
                           fix=fix)


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
    if not text.strip():
        return YamlSource(path=path, data=None, root=None)
    root, data = compose_checked(text, str(path))
    return YamlSource(path=path, data=data, root=root)
