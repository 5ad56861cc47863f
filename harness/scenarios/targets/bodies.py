"""A scenario's intents as a profiled service's own create bodies (``operations.create_job.body``,
rendered by :mod:`harness.target.bodies`): what is sent, and so what the fingerprint rules
compare; and why a scenario cannot be judged through the template, when it cannot.
"""

from __future__ import annotations

import json
from typing import Any

from harness.domain import Intent
from harness.scenarios.model import Create, IntentSpec, Scenario
from harness.target.bodies import (
    MissingField,
    body_text,
    can_reorder,
    intent_view,
    render,
    respelled,
)


def sent_intent(template: Any, intent: IntentSpec) -> IntentSpec:
    """``intent`` as the service's body: the rendered template (a respelt intent's with its keys
    reversed); its meaning, and so its canonical fingerprint, unchanged."""
    body = render(template, intent_view(intent.body))
    text = body_text(body, respelling=respelled(intent.text))
    return IntentSpec(name=intent.name, body=body, text=text, fingerprint=intent.fingerprint,
                      max_open_attempts=intent.max_open_attempts)


def _intents(scenario: Scenario) -> list[IntentSpec]:
    seen: dict[str, IntentSpec] = {}
    for step in scenario.steps:
        if isinstance(step.action, Create):
            for intent in step.action.intents:
                seen.setdefault(intent.text, intent)
    return list(seen.values())


def _retries(scenario: Scenario) -> bool:
    """Does the scenario send one intent, spelt the same, more than once (an identical retry:
    something to judge besides the spellings)?"""
    sent: list[str] = []
    for step in scenario.steps:
        if isinstance(step.action, Create):
            sent += [step.action.intent_of_copy(i).text for i in range(step.concurrent)]
    return len(sent) > len(set(sent))


def template_problem(template: Any, scenario: Scenario) -> str | None:
    """Why ``scenario`` cannot be played through the body template, or None: a field one of its
    intents lacks, two of its intents given one body, or intents that differ only in spelling
    where the service's body has nothing to reorder and nothing else is sent twice (with an
    identical retry, the spellings are retries too: the scenario still judges them)."""
    rendered: dict[str, tuple[IntentSpec, Any]] = {}
    for intent in _intents(scenario):
        try:
            body = render(template, intent_view(intent.body))
        except MissingField as exc:
            return f"the create body template {exc.message} (intent {intent.name!r})"
        for other, other_body in rendered.values():
            if other.fingerprint != intent.fingerprint and other_body == body:
                return (f"the create body template gives intents {other.name!r} and "
                        f"{intent.name!r} the same body: the service could not tell them apart")
        rendered[intent.text] = (intent, body)
    spellings: dict[str, set[str]] = {}
    for intent, body in rendered.values():
        if not can_reorder(body):
            spellings.setdefault(intent.fingerprint, set()).add(intent.text)
    if any(len(texts) > 1 for texts in spellings.values()) and not _retries(scenario):
        return ("its intents differ only in spelling, and the service's create body (operations."
                "create_job.body) has no object with two keys: there is nothing to reorder or "
                "respell, so every spelling is the same request")
    return None


def probe_intents() -> list[IntentSpec]:
    """Two intents the preflight creates, each under a fresh key (never a scenario's)."""
    out = []
    for i, ticket in enumerate(("failover-harness preflight probe", "another probe"), 1):
        body = {"contract": "failover_harness_preflight", "input": {"ticket": ticket}}
        out.append(IntentSpec(name=f"preflight-{i}", body=body,
                              text=json.dumps(body, separators=(",", ":")),
                              fingerprint=Intent.from_json(body).fingerprint,
                              max_open_attempts=1))
    return out
