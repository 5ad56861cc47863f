"""Values in a service's bodies: a field read at a dotted path (``pick``), placeholders filled
in a body template (``fill``), and what a client saw when no answer came
(``transport_detail``). Shared by the scenarios' HTTP target and the drill."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.domain.redaction import redact_url as redact


def pick(body: Any, path: str | None) -> Any:
    """The value at dotted ``path`` in ``body`` (``data.id``, ``items.0.id``; ``.``: the body
    itself), else None."""
    if path is None:
        return None
    if path == ".":
        return body
    value = body
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def transport_detail(exc: Exception, base: str, never_sent: bool) -> str:
    """What the client saw when no answer came: where, the error and its text, and whether the
    request may have been applied (as the API.md target's client says it)."""
    text = str(exc).strip()
    return (f"no response from {redact(base)}: {type(exc).__name__}" + (f": {text}" if text else "")
            + (" (the request was not sent)" if never_sent else " (the outcome is unknown)"))


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """``"{provider}"`` placeholders in a body template, recursively; ``"{event}"`` is the event."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        return template.format(**{k: v for k, v in values.items() if isinstance(v, str)})
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template
