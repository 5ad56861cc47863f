"""Render a contract's prompt (Jinja2, StrictUndefined); find leftover placeholders."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jinja2

from harness.contracts.model import Contract, Golden

# What a placeholder that survived rendering looks like: Jinja, shell/JS and Python-format styles.
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\$\{[^}]*\}|\{[A-Za-z_]\w*\}")


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A rendered prompt, or why it could not be rendered."""

    system: str
    user: str
    error: str | None = None


@lru_cache(maxsize=256)
def _compile(source: str) -> jinja2.Template:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
    return env.from_string(source)


def render(contract: Contract, values: Mapping[str, Any]) -> RenderedPrompt:
    """The system and user prompts for ``values``; ``error`` names a missing variable."""
    try:
        system = _compile(contract.system_template).render(**values)
        user = _compile(contract.user_template).render(**values)
    except jinja2.UndefinedError as exc:
        return RenderedPrompt("", "", f"unrendered placeholder: {exc.message}")
    except jinja2.TemplateError as exc:
        return RenderedPrompt("", "", f"template error: {exc}")
    return RenderedPrompt(system, user)


_rendered: dict[tuple[str, str, str, str], RenderedPrompt] = {}


def render_golden(contract: Contract, golden: Golden) -> RenderedPrompt:
    """:func:`render` for a golden case, memoised (the contract hash covers the inputs)."""
    key = (contract.hash, contract.system_template, contract.user_template, golden.id)
    found = _rendered.get(key)
    if found is None:
        if len(_rendered) > 4096:
            _rendered.clear()
        found = _rendered[key] = render(contract, golden.input)
    return found


def leftover_placeholders(text: str, values: Mapping[str, Any]) -> list[str]:
    """Placeholders in rendered ``text`` that did not come from the input values themselves."""
    if "{" not in text:  # every pattern needs a brace: the common case costs one scan
        return []
    from_input = [s for s in _strings(values) if _PLACEHOLDER.search(s)]
    found = []
    for match in _PLACEHOLDER.finditer(text):
        if not any(match.group(0) in s for s in from_input):
            found.append(match.group(0))
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
