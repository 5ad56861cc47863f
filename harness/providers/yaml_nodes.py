"""YAML with positions: parse once into nodes and data, map a field path back to its line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from harness.domain.errors import ConfigError


def compose_checked(text: str, source: str) -> tuple[yaml.Node, Any]:
    """The node tree and the plain data of one YAML document; ConfigError on bad YAML.

    Duplicate mapping keys are an error (PyYAML would silently keep the last one).
    """
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise ConfigError("the file is empty", file=source, line=1,
                              fix="add `providers:` (see the example providers.yaml)")
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


def line_of(root: yaml.Node, loc: Sequence[Any]) -> int:
    """1-based line of the deepest node along ``loc`` (a key's line for a mapping entry)."""
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
