"""A profiled service's answers in API.md's shapes: the key-reused refusal, the replay mark or
shape, the list, the field names (``fields:``, ``values:``) and the problem code. Pure: a
response in, a :class:`Reply` out.
"""

from __future__ import annotations

from typing import Any

import httpx

from harness.scenarios.targets.base import Reply
from harness.target.bounded import json_body
from harness.target.model import Operation, OperationName, Profile
from harness.target.values import pick

#: with ``conflict: none`` (no specific key-reuse answer), a create refused with one of these is
#: taken as the key-reuse refusal: the body was accepted once, so the key is what is refused
REFUSALS = frozenset({400, 409, 412, 422})
KEY_REUSED = "idempotency_key_reused"
#: API.md's problem codes: a body naming one says what the answer is, whatever its status
API_CODES = frozenset({"idempotency_key_missing", "idempotency_key_invalid", "invalid_request",
                       KEY_REUSED, "attempt_in_flight", "job_completed", "invalid_transition",
                       "not_found", "unauthenticated"})
LISTS = ("list_attempts", "list_races")
SAID_CHARS = 160  # how much of a refusal's own text is kept (never a 401/403's)


def matches(answer: Any, response: httpx.Response, body: Any) -> bool:
    if answer is None or response.status_code != answer.status:
        return False
    return answer.code is None or pick(body, answer.code_field) == answer.code


def key_reused(profile: Profile, response: httpx.Response, body: Any) -> bool:
    """A create's answer is the key-reused refusal: the declared conflict answer (or, with
    ``conflict: none``, any refusal in :data:`REFUSALS`) — unless the body names another of
    API.md's codes (a 409 ``attempt_in_flight`` is never a reused key)."""
    conflict = profile.conflict_answer
    if conflict is None:
        return response.status_code in REFUSALS
    if not matches(conflict, response, body):
        return False
    if conflict.code is not None:
        return True
    code = pick(body, conflict.code_field or "code") if isinstance(body, dict) else None
    return not (isinstance(code, str) and code in API_CODES and code != KEY_REUSED)


def replay_shape(profile: Profile, op: Operation, response: httpx.Response, body: Any) -> bool:
    """The profile's replay shape (``replay: {status: 409, body: original}``): that status,
    carrying the job."""
    shape = profile.replay_shape
    return (shape is not None and response.status_code == shape.status
            and isinstance(body, dict) and pick(body, op.fields.get("id", "id")) is not None)


def translated(profile: Profile, op_name: OperationName, response: httpx.Response) -> Reply:
    try:
        body = json_body(response) if response.content else None
    except ValueError:
        body = response.text
    status = response.status_code
    op = profile.operations[op_name]
    replayed = None
    if op_name == "create_job":  # the service's replay mark, on any answer (a cached 500)
        marker = profile.replay_mark
        if marker is not None:  # unmarked replays: whether it is one is not observable
            replayed = response.headers.get(marker.name, "").lower() == marker.value.lower()
        elif profile.replay_shape is not None:
            replayed = False
        if replay_shape(profile, op, response, body):
            return Reply(200, mapped(op, body), replayed=True)
        if key_reused(profile, response, body):
            # API.md's code, the service's own status (reports show what it really answered)
            return Reply(status, {"code": KEY_REUSED, "status": status}, replayed=replayed)
    if 200 <= status < 300:
        if op_name in LISTS:
            items = body if op.top_level_list else pick(body, op.items)
            listed = [mapped(op, item) for item in items] \
                if isinstance(items, list) else None
            return Reply(status, listed)
        if op_name == "create_job":
            created = status == profile.created_status and not replayed
            return Reply(201 if created else 200, mapped(op, body), replayed=replayed)
        return Reply(status, mapped(op, body))
    code = pick(body, "code") if isinstance(body, dict) else None
    if status == 404:
        code = "not_found"
    problem = {"code": code if isinstance(code, str) else f"http_{status}", "status": status}
    if isinstance(body, dict) and "blocking_attempt_id" in body:  # API.md's attempt_in_flight
        problem["blocking_attempt_id"] = body["blocking_attempt_id"]
    if 400 <= status < 500 and status not in (401, 403):  # its words, for the preflight's error
        problem["said"] = " ".join(response.text.split())[:SAID_CHARS]
    excerpt = response.text[:200] if status >= 500 else ""
    return Reply(status, problem, excerpt=excerpt, replayed=replayed)


def mapped(op: Operation, body: Any) -> Any:
    """Their answer in API.md's field names (``fields:``; none: it already uses them)."""
    if not op.fields:
        return body
    mapped = {ours: pick(body, theirs) for ours, theirs in op.fields.items()}
    for field_name, table in op.values.items():
        if mapped.get(field_name) in table:
            mapped[field_name] = table[mapped[field_name]]
    return mapped
