"""Helpers for API tests: the standard intent, fresh keys, and the problem-details assertion."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from harness.service.client import AsyncHarnessClient, Reply

INTENT = {"contract": "ticket_triage", "input": {"ticket": "printer on fire", "n": 3}}
JOB_FIELDS = {
    "id", "idempotency_key", "fingerprint", "contract", "input", "params", "policy", "status",
    "version", "completed_by", "result", "created_at", "updated_at",
}
RACE_FIELDS = {"attempt_id", "at", "payload_sha256", "winner_attempt_id", "reason"}


def new_key() -> str:
    return f"key-{uuid.uuid4().hex}"


def problem(reply: Reply, status: int, code: str) -> dict[str, Any]:
    """Assert ``reply`` is an RFC 9457 problem with ``status`` and ``code``; return its body."""
    assert reply.status == status, reply.body
    assert reply.headers["content-type"].startswith("application/problem+json")
    body = reply.body
    assert isinstance(body, dict)
    assert {"type", "title", "status", "detail", "code"} <= body.keys()
    assert body["status"] == status
    assert body["code"] == code
    assert reply.code == code
    return body


def is_rfc3339_utc(text: str) -> bool:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return text.endswith("Z") and parsed.utcoffset() == UTC.utcoffset(None)


async def new_job(api: AsyncHarnessClient, **intent: Any) -> dict[str, Any]:
    reply = await api.create_job(new_key(), {**INTENT, **intent})
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


async def new_attempt(
    api: AsyncHarnessClient, job_id: str, provider: str = "openai"
) -> dict[str, Any]:
    reply = await api.start_attempt(job_id, provider)
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


async def event(api: AsyncHarnessClient, attempt_id: str, kind: str, **fields: Any) -> Reply:
    return await api.post_event(attempt_id, {"type": kind, **fields})


