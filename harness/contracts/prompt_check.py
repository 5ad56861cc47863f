"""A contract's prompt renders for every golden input, checked when the contract loads.

A placeholder the inputs do not have (``{{ txt }}`` for ``{{ text }}``), or one left in the
rendered text (``{text}``, ``${text}``), is the contract's mistake: it is found before any
call, as bad input naming contract.yaml's line and the golden case, never judged as a
provider's failure (which would replace its record with an ineligible one).
"""

from __future__ import annotations

import re

import yaml

from harness.contracts.model import Contract, Golden
from harness.contracts.render import leftover_placeholders, render
from harness.domain.errors import ConfigError
from harness.yamlsrc import YamlSource

_UNDEFINED = re.compile(r"'([^']+)' is undefined")


def check_prompts(src: YamlSource, contract: Contract) -> None:
    """Raise :class:`ConfigError` at the prompt's line if some golden input does not render."""
    for golden in contract.goldens:
        rendered = render(contract, golden.input)
        if rendered.error is not None:
            name = _UNDEFINED.search(rendered.error)
            missing = name.group(1) if name else None
            part = _part_using(contract, missing)
            raise _error(
                src, contract, part, missing, golden,
                f"the {part} prompt does not render for golden case {golden.id!r}: "
                f"{rendered.error}",
                fix=(f"fix the placeholder's spelling in contract.yaml, or add {missing!r} to "
                     f"the input of {golden.source}") if missing else "fix the template",
            )
        for part, text in (("system", rendered.system), ("user", rendered.user)):
            left = leftover_placeholders(text, golden.input)
            if left:
                raise _error(
                    src, contract, part, left[0], golden,
                    f"the {part} prompt keeps the placeholder {left[0]!r} after rendering "
                    f"golden case {golden.id!r} (it would be sent as it is)",
                    fix="write placeholders as Jinja2 {{ name }} with a name the golden "
                    "inputs have, or remove it",
                )


def _part_using(contract: Contract, name: str | None) -> str:
    if name and re.search(rf"\b{re.escape(name)}\b", contract.system_template) and not \
            re.search(rf"\b{re.escape(name)}\b", contract.user_template):
        return "system"
    return "user"


def _error(src: YamlSource, contract: Contract, part: str, needle: str | None, golden: Golden,
           message: str, *, fix: str) -> ConfigError:
    return ConfigError(message, file=str(src.path), line=_template_line(src, part, needle),
                       field=f"prompt.{part}", fix=fix)


def _template_line(src: YamlSource, part: str, needle: str | None) -> int | None:
    """The line in contract.yaml where ``needle`` stands in the prompt (or the prompt's)."""
    line = src.line_of(("prompt", part))
    node = _value_node(src.root, part)
    if node is None or not isinstance(node, yaml.ScalarNode) or not needle:
        return line
    first = node.start_mark.line + 1 + (1 if node.style in ("|", ">") else 0)
    for offset, text in enumerate(node.value.splitlines()):
        if needle in text:
            return first + offset if node.style in ("|", ">") else node.start_mark.line + 1
    return line


def _value_node(root: yaml.Node | None, part: str) -> yaml.Node | None:
    for key, value in getattr(root, "value", []) if isinstance(root, yaml.MappingNode) else []:
        if getattr(key, "value", None) == "prompt" and isinstance(value, yaml.MappingNode):
            for k, v in value.value:
                if getattr(k, "value", None) == part:
                    return v
    return None
