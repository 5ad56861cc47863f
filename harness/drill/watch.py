"""How the drill reads the service's answers: status classes, a chat answer (JSON or SSE),
the lists a service shows per job, and filling ``{tag}``/``{key}`` into a request."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from harness.drill.evidence import ANSWERED_BY_HEADERS, StatusClass, Submission
from harness.providers.secrets import redact
from harness.target.bounded import json_body
from harness.target.drill_section import Listing, StatusValues, Submit
from harness.target.ids import fill_path
from harness.target.values import pick


def fill(template: Any, marks: Mapping[str, str]) -> Any:
    """``template`` with every mark (``{tag}``, ``{key}``) replaced inside its strings."""
    if isinstance(template, str):
        for mark, value in marks.items():
            template = template.replace(mark, value)
        return template
    if isinstance(template, dict):
        return {k: fill(v, marks) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, marks) for v in template]
    return template


def classify(values: StatusValues, raw: Any) -> StatusClass:
    """The drill's class of a status value (``unrecognised``: the profile does not list it)."""
    text = None if raw is None else str(raw)
    for name in ("succeeded", "failed", "running", "unknown"):
        if text in getattr(values, name):
            return name
    return "unrecognised"


def listed(client: httpx.Client, listing: Listing, job: str, headers: dict[str, str]
           ) -> int | None:
    """How many entries the service lists for ``job`` (None: it did not answer a list)."""
    try:
        response = client.request(listing.method, fill_path(listing.path, {"job_id": job}),
                                  headers=headers)
        items = pick(json_body(response), listing.items)
    except (httpx.HTTPError, ValueError):
        return None
    return len(items) if isinstance(items, list) else None


def read_chat(client: httpx.Client, submit: Submit, headers: dict[str, str], body: Any,
              at: float, now: Callable[[], float], stream: bool = False) -> Submission:
    """One synchronous chat call: its status, its answer's text, and for a stream whether it
    ended properly (``[DONE]`` / ``message_stop``)."""
    if not (stream or submit.stream):
        response = client.request(submit.method, submit.path, json=body, headers=headers)
        try:
            text = pick(json_body(response), submit.result_field)
        except ValueError:
            text = None
        return Submission(at, response.status_code, result=None if text is None else str(text),
                          error="" if response.is_success else redact(response.text[:200]),
                          ended_at=now(), answered_base=_answered_base(response))
    pieces: list[str] = []
    complete = False
    status = base = None
    try:
        with client.stream(submit.method, submit.path, json=body, headers=headers) as response:
            status, base = response.status_code, _answered_base(response)
            for line in response.iter_lines():
                piece, end = _sse_piece(line)
                pieces.append(piece)
                complete = complete or end
    except httpx.HTTPError as exc:
        return Submission(at, status, result="".join(pieces), stream_complete=False,
                          error=redact(f"{type(exc).__name__}: {exc}"), ended_at=now(),
                          answered_base=base, unreached=status is None and isinstance(
                              exc, (httpx.ConnectError, httpx.ConnectTimeout)))
    return Submission(at, status, result="".join(pieces), stream_complete=complete,
                      ended_at=now(), answered_base=base)


def unreadable(response: httpx.Response) -> str:
    """Why an answer the drill needed as JSON could not be read: a redirect (never followed),
    or a body that is not JSON (its first bytes, as text)."""
    if response.is_redirect:
        where = response.headers.get("location", "")
        return (f"a redirect to {where[:200]!r}: the drill does not follow redirects (point the "
                "profile's path at the URL that answers)")
    excerpt = response.content[:120].decode("utf-8", "replace")
    return f"a body that is not JSON ({len(response.content):,} bytes: {excerpt!r})"


def _answered_base(response: httpx.Response) -> str | None:
    return next((response.headers[h] for h in ANSWERED_BY_HEADERS if h in response.headers),
                None)


def _sse_piece(line: str) -> tuple[str, bool]:
    """The text one SSE line adds (OpenAI or Anthropic), and whether it ends the stream."""
    if not line.startswith("data:"):
        return "", False
    data = line[5:].strip()
    if data == "[DONE]":
        return "", True
    try:
        event = json.loads(data)
    except ValueError:
        return "", False
    if not isinstance(event, dict):
        return "", False
    if event.get("type") == "message_stop":
        return "", True
    delta = event.get("delta") or {}
    if isinstance(delta, dict) and isinstance(delta.get("text"), str):
        return delta["text"], False
    choices = event.get("choices") or []
    if choices and isinstance(choices[0], dict):
        content = (choices[0].get("delta") or {}).get("content")
        return (content if isinstance(content, str) else ""), False
    return "", False
