"""The service's own create body, made from a scenario's intent (``operations.create_job.body``).

A body template is the JSON the service takes, with placeholders for the intent:

- ``{prompt}``: the whole intent as one line of text (``contract="…" input={…} params={…}
  policy={…}``, each part canonical JSON): deterministic, and two intents give two prompts;
- ``{intent_json}``: the canonical JSON (RFC 8785) of the whole intent, as a string;
- ``{intent.<dotted.path>}``: one field of the intent (``{intent.input.ticket}``). A placeholder
  that is a whole string value keeps the field's JSON type (a number stays a number); inside a
  longer string it is written as text.

The intent is taken with its defaults filled in and its numbers canonical, so one intent spelled
two ways gives one body. An intent written with other whitespace, number spellings or another
order of its top-level keys than ``contract, input, params, policy`` is a *respelling*: its body
is sent with the keys of every object in reverse order (the service's own body, reordered).

:func:`check_template` is the load-time proof that the template keeps intents apart: rendered
for a base intent and for intents differing from it in one field each, every body must differ
from the base's, and a respelling of the base must give the base's body.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.domain import Intent, canonical_json

#: the placeholders a create body may hold
PLACEHOLDER = re.compile(r"\{(prompt|intent_json|intent(?:\.[A-Za-z0-9_-]+)+)\}")
#: anything that looks like a placeholder (``{name}``, ``{a.b}``): a misspelt one is an error
MARK = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
TOP_ORDER = ("contract", "input", "params", "policy")
PLACEHOLDERS_FIX = ("write {prompt} (the whole intent as one line of text), {intent_json} (its "
                    "canonical JSON as a string) or {intent.<field>} (one field, e.g. "
                    "{intent.input.ticket}); e.g. body: {text: \"{prompt}\"}")


class MissingField(ValueError):
    """A ``{intent.<path>}`` placeholder names a field the intent does not have."""

    def __init__(self, path: str) -> None:
        self.message = f"names intent.{path}, which the intent does not have"
        super().__init__(self.message)
        self.path = path


def intent_view(body: Any) -> dict[str, Any]:
    """The intent as the body template sees it: defaults filled in, numbers canonical."""
    intent = Intent.from_json(body)
    return dict(json.loads(canonical_json(intent.to_json())))


def _canon(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def prompt(view: dict[str, Any]) -> str:
    """The whole intent as one line of text (each part canonical JSON, so the text is
    injective)."""
    return " ".join(f"{name}={_canon(view.get(name, {}))}" for name in TOP_ORDER)


def _field(view: dict[str, Any], path: str) -> Any:
    value: Any = view
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise MissingField(path)
    return value


def _value(name: str, view: dict[str, Any]) -> Any:
    if name == "prompt":
        return prompt(view)
    if name == "intent_json":
        return _canon(view)
    return _field(view, name[len("intent."):])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _canon(value)


def render(template: Any, view: dict[str, Any]) -> Any:
    """``template`` with its placeholders filled from the intent ``view`` (MissingField when a
    ``{intent.<path>}`` names no field of it)."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole:
            return _value(whole.group(1), view)
        return PLACEHOLDER.sub(lambda m: _text(_value(m.group(1), view)), template)
    if isinstance(template, dict):
        return {k: render(v, view) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, view) for v in template]
    return template


def reversed_keys(value: Any) -> Any:
    """``value`` with the keys of every object in reverse order (the same JSON value)."""
    if isinstance(value, dict):
        return {k: reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(v) for v in value]
    return value


def can_reorder(value: Any) -> bool:
    """Has ``value`` an object with two keys or more (something a respelling can reorder)?"""
    if isinstance(value, dict):
        return len(value) > 1 or any(can_reorder(v) for v in value.values())
    if isinstance(value, list):
        return any(can_reorder(v) for v in value)
    return False


def respelled(text: str) -> bool:
    """Is the intent's text another spelling than its plain one: whitespace, a number's
    spelling or an escape (not what ``json.dumps`` writes), or top-level keys out of order?"""
    written = json.loads(text)
    plain = json.dumps(written, ensure_ascii=False, separators=(",", ":"))
    keys = [k for k in written if k in TOP_ORDER] if isinstance(written, dict) else []
    return text != plain or keys != sorted(keys, key=TOP_ORDER.index)


def body_text(body: Any, *, respelling: bool) -> str:
    """The body as sent: compact JSON in the template's order (a respelling: keys reversed)."""
    sent = reversed_keys(body) if respelling else body
    return json.dumps(sent, ensure_ascii=False, separators=(",", ":"))


BASE: dict[str, Any] = {"contract": "ticket_triage",
                        "input": {"ticket": "printer on fire", "priority": 1},
                        "params": {"temperature": 0.5}, "policy": {"max_open_attempts": 1}}
#: intents differing from BASE in one field each: (what differs, the intent)
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("contract", {**BASE, "contract": "refund_request"}),
    ("input.ticket", {**BASE, "input": {"ticket": "refund order 7", "priority": 1}}),
    ("input.priority", {**BASE, "input": {"ticket": "printer on fire", "priority": 2}}),
    ("an added input field", {**BASE, "input": {**BASE["input"], "amount": 10}}),
    ("params", {**BASE, "params": {"temperature": 0.9}}),
    ("policy", {**BASE, "policy": {"max_open_attempts": 2}}),
)
#: BASE spelt otherwise: its keys reordered, a number written 1.0, the default policy left out
RESPELT = {"params": {"temperature": 5e-1},
           "input": {"priority": 1.0, "ticket": "printer on fire"}, "contract": "ticket_triage"}


def check_template(template: Any) -> tuple[str, str] | None:
    """Why ``template`` cannot stand for the intents (and the fix), or None: an unknown or
    misspelt placeholder, a field the intent lacks, two intents given one body, or one intent
    given two bodies."""
    for mark in _marks(template):
        if not PLACEHOLDER.fullmatch("{" + mark + "}"):
            return f"{{{mark}}} is not a placeholder of a create body", PLACEHOLDERS_FIX
    base_view = intent_view(BASE)
    try:
        base = render(template, base_view)
    except MissingField as exc:
        return (f"{exc.message} (an intent has contract, input, params and policy)",
                PLACEHOLDERS_FIX)
    if render(template, intent_view(RESPELT)) != base:
        return "one intent spelt two ways gives two bodies", PLACEHOLDERS_FIX
    for what, variant in VARIANTS:
        try:
            body = render(template, intent_view(variant))
        except MissingField as exc:
            return exc.message, PLACEHOLDERS_FIX
        if body == base:
            return (f"two intents that differ only in {what} get the same body "
                    f"({body_text(base, respelling=False)[:120]}): the service would take one "
                    "for the other, and every scenario sending two intents under one key would "
                    "be judged on bodies it cannot tell apart",
                    "carry the whole intent: put {prompt} or {intent_json} in the body, e.g. "
                    "body: {text: \"{prompt}\"}")
    return None


def _marks(template: Any) -> list[str]:
    if isinstance(template, str):
        return MARK.findall(template)
    if isinstance(template, dict):
        return [m for v in template.values() for m in _marks(v)]
    if isinstance(template, list):
        return [m for v in template for m in _marks(v)]
    return []
