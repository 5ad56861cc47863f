"""The service's HTTP plumbing, on bare ASGI: a route table, requests, JSON and problem replies.

No web framework sits between uvicorn and the API: a request is matched against the route table
(one dictionary look-up per path shape), its body read with the 1 MiB limit, and the handler's
reply written as one JSON document. The same table is what the OpenAPI document is built from
(:mod:`harness.service.schemas`), so what is served and what is described cannot drift apart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.domain.errors import HarnessError, StoreError
from harness.service.payload import MAX_BODY_BYTES, PayloadTooLarge

log = logging.getLogger("harness.service")

PROBLEM_MEDIA_TYPE = "application/problem+json"
JSON_MEDIA_TYPE = "application/json"

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class HttpProblem(HarnessError):
    """The HTTP request cannot be served."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.http_status = status  # type: ignore[misc]
        self.code = code  # type: ignore[misc]


class _StoreUnavailable(StoreError):
    """The store's database failed."""


@dataclass(slots=True)
class Request:
    """One HTTP request: what the handlers read."""

    method: str
    path: str
    headers: dict[str, str]
    params: dict[str, str]
    receive: Receive

    async def body(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The raw body, refusing (413) anything over ``limit`` before reading it all."""
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"the body has {int(declared)} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"the body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@dataclass(frozen=True, slots=True)
class Reply:
    """A JSON reply: status, body (any JSON value) and extra headers."""

    body: Any
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    media_type: str = JSON_MEDIA_TYPE


Handler = Callable[[Request], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Route:
    """One operation: method and path template (``/v1/jobs/{job_id}``), its handler, and what
    the OpenAPI document says about it (``doc``: operationId, summary, body, responses…)."""

    method: str
    path: str
    handler: Handler
    doc: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))

    @property
    def shape(self) -> tuple[str | None, ...]:
        """The path's segments, ``None`` where a parameter goes."""
        return tuple(None if p.startswith("{") else p for p in self.parts)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every reply is written (no NaN: the store never holds one)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


class Router:
    """Routes by path shape, then method; unknown paths are 404, known ones 405."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes
        # segment count → [(shape, {method: route})]
        self._table: dict[int, list[tuple[tuple[str | None, ...], dict[str, Route]]]] = {}
        for route in routes:
            shapes = self._table.setdefault(len(route.shape), [])
            for shape, methods in shapes:
                if shape == route.shape:
                    methods[route.method] = route
                    break
            else:
                shapes.append((route.shape, {route.method: route}))

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        segments = path.strip("/").split("/")
        for shape, methods in self._table.get(len(segments), ()):
            if all(s is None or s == seg for s, seg in zip(shape, segments, strict=True)):
                route = methods.get(method)
                if route is None:
                    allowed = ", ".join(sorted(methods))
                    raise HttpProblem(405, "method_not_allowed",
                                      f"{method} is not allowed on {path}; use {allowed}",
                                      allow=allowed)
                names = [p[1:-1] for p in route.parts if p.startswith("{")]
                values = [seg for s, seg in zip(shape, segments, strict=True) if s is None]
                if any(not v for v in values):
                    break
                return route, dict(zip(names, values, strict=True))
        raise HttpProblem(404, "not_found", f"no route {path}")


def problem_reply(error: HarnessError, path: str) -> Reply:
    body = error.to_problem()
    body["instance"] = path
    headers: list[tuple[str, str]] = []
    if error.http_status == 401:
        headers.append(("www-authenticate", "Bearer"))
    elif isinstance(error, StoreError):
        headers.append(("retry-after", "1"))
    if error.http_status == 405 and "allow" in error.extra:
        headers.append(("allow", str(body.pop("allow"))))
    return Reply(body, error.http_status, tuple(headers), PROBLEM_MEDIA_TYPE)


async def handle_http(router: Router, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one HTTP request: route, run the handler, turn every error into a problem."""
    method, path = scope["method"], scope["path"]
    try:
        route, params = router.match(method, path)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        reply = await route.handler(Request(method, path, headers, params, receive))
    except HarnessError as exc:
        if isinstance(exc, StoreError):
            # The driver's text stays in the server log; the client learns only that it failed.
            log.warning("store error on %s %s: %s", method, path, exc.message)
            exc = _StoreUnavailable("the store is unavailable; retry the request later")
        reply = problem_reply(exc, path)
    except Exception as exc:  # no stack trace and no driver text reaches a client
        log.error("internal error on %s %s: %s", method, path, type(exc).__name__)
        reply = problem_reply(HttpProblem(500, "internal_error", "internal error"), path)
    body = dumps(reply.body)
    raw = [(b"content-type", reply.media_type.encode()),
           (b"content-length", str(len(body)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
    await send({"type": "http.response.start", "status": reply.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
