"""What the three storage-backed example services share (``redis_lock_service.py``,
``redis_two_writes_service.py``, ``pg_claim_service.py``): reading an idempotent create, answering
a replay, and their command line. Standard library, Starlette, uvicorn and the storage client
only: these files stand for *your* service, not for failover-harness.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from jobs_app import (  # type: ignore[import-not-found]
    ASGIApp,
    Receive,
    Scope,
    Send,
    build_parser,
    fingerprint,
    owner_of,
    read_body,
    respond,
)
from starlette.datastructures import Headers

KEY_REUSED = {"error": "key_reused", "detail": "this key was used with another request body"}
IN_PROGRESS = {"error": "request_in_progress"}


@dataclass(frozen=True, slots=True)
class Create:
    """An idempotent ``POST /jobs``: who, which key, the body and its fingerprint."""

    owner: str
    key: str
    raw: bytes
    body: Any
    fingerprint: str


class CreateMiddleware:
    """An idempotency middleware on ``POST /jobs``: every other request goes to the app; a
    create is read (400 when it is not one) and handed to :meth:`create`."""

    def __init__(self, app: ASGIApp, store: Any, *, correct: bool = False) -> None:
        self.app = app
        self.store = store
        self.correct = correct

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_create(scope):
            await self.app(scope, receive, send)
            return
        create = await read_create(scope, receive, send)
        if create is not None:
            await self.create(create, scope, send)

    async def create(self, create: Create, scope: Scope, send: Send) -> None:
        raise NotImplementedError


def is_create(scope: Scope) -> bool:
    return bool(scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/jobs")


async def read_create(scope: Scope, receive: Receive, send: Send) -> Create | None:
    """The request, or None after answering 400 (no key, not JSON)."""
    headers = Headers(scope=scope)
    key = headers.get("idempotency-key")
    if not key:
        await respond(send, 400, {"error": "idempotency_key_missing"})
        return None
    raw = await read_body(receive)
    try:
        body = json.loads(raw)
    except ValueError:
        await respond(send, 400, {"error": "invalid_json"})
        return None
    scope.setdefault("state", {})["json"] = body
    return Create(owner_of(headers), key, raw, body, fingerprint(body))


async def replay(send: Send, stored_fingerprint: str, fp: str, status: int,
                 content: bytes) -> None:
    """Answer a stored response again, or 422 when the key came with another body."""
    if stored_fingerprint != fp:
        await respond(send, 422, KEY_REUSED)
        return
    await respond(send, status, content, {"Idempotent-Replayed": "true"})


async def in_progress(send: Send) -> None:
    await respond(send, 409, IN_PROGRESS, {"Retry-After": "1"})


async def forward(send: Send, status: int, headers: list[Any], content: bytes) -> None:
    """Send the handler's own response."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def parser(description: str, storage: str, default_url: str) -> argparse.ArgumentParser:
    """The shared command line plus ``--<storage> URL`` (default: $HARNESS_PROXY_URL, so
    ``explore --service-cmd`` needs no flag) and ``--correct`` (the twin without the race)."""
    import os

    def options(p: argparse.ArgumentParser) -> None:
        p.add_argument(f"--{storage}", default=os.environ.get("HARNESS_PROXY_URL", default_url),
                       help=f"the {storage} URL (default: $HARNESS_PROXY_URL, else {default_url})")
        p.add_argument("--correct", action="store_true",
                       help="the correct twin: the same service without the race")

    return build_parser(description, options)
