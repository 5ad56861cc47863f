"""A typed httpx client for the reference HTTP API v1 (sync and async), used as the HTTP target.

Usage::

    from harness.service.client import HarnessClient, AsyncHarnessClient

    with HarnessClient("http://127.0.0.1:8787", token) as api:
        reply = api.create_job("click-1", {"contract": "ticket_triage", "input": {"t": "hi"}})
        reply.status      # 201 new, 200 replay, 4xx/5xx problem
        reply.body        # the job (dict), or the RFC 9457 problem (dict)
        reply.replayed    # True when the server sent ``Idempotent-Replayed: true``
        reply.code        # the problem's machine code ("idempotency_key_reused"…), else None
        job_id = reply.body["id"]
        attempt = api.start_attempt(job_id, "openai").body
        api.post_event(attempt["id"], {"type": "succeeded", "result": {"label": "bug"}})

    async with AsyncHarnessClient(url, token) as api:      # the same methods, awaited
        reply = await api.get_job(job_id)

Contract of every method:

- It returns a :class:`Reply` (status code, parsed JSON body, headers) for every HTTP
  response, 2xx, 4xx and 5xx alike: a refusal is data, never an exception.
- It raises :class:`TransportFailure` only when no HTTP response arrived. Its
  ``maybe_applied`` tells a scenario engine whether the server may have acted on the request:
  ``False`` when the connection was never made (safe to retry), ``True`` otherwise (a read
  timeout or a reset after sending: the outcome is indeterminate).

``HarnessClient(base_url, token, *, transport=None, timeout=30.0, limits=None)``;
``transport`` is any ``httpx.BaseTransport`` (``httpx.AsyncBaseTransport`` for the async
client, e.g. ``httpx.ASGITransport(app)`` to call an app in-process). ``token`` may be ``None``
to send no ``Authorization`` header. The request logic is written once (:class:`_Api`); the two
clients differ only in how they send.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Self, TypeVar
from urllib.parse import quote

import httpx

from harness.domain.errors import HarnessError
from harness.tls import tls_for

__all__ = ["AsyncHarnessClient", "HarnessClient", "Reply", "TransportFailure"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP response: status, parsed JSON body (or text if not JSON), headers."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return 200 <= self.status < 300

    @property
    def replayed(self) -> bool:
        """The server answered an idempotent replay (``Idempotent-Replayed: true``)."""
        return self.headers.get("idempotent-replayed", "").lower() == "true"

    @property
    def problem(self) -> dict[str, Any] | None:
        """The RFC 9457 problem of a non-2xx answer, if the body is one."""
        if self.ok or not isinstance(self.body, dict):
            return None
        return self.body

    @property
    def code(self) -> str | None:
        """The problem's machine ``code`` (e.g. ``attempt_in_flight``), else ``None``."""
        problem = self.problem
        code = problem.get("code") if problem else None
        return code if isinstance(code, str) else None


class TransportFailure(HarnessError):
    """No HTTP response arrived from the service."""

    code = "transport_failure"
    http_status = 502

    def __init__(self, message: str, *, maybe_applied: bool) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


def _path_id(value: str) -> str:
    """An opaque id as one path segment (a dot segment is escaped too: never resolved away)."""
    return quote(value, safe="") if value not in (".", "..") else value.replace(".", "%2E")


class _Api(Generic[R]):
    """The API's operations, written once; a subclass supplies ``_send``."""

    def _send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> R:
        raise NotImplementedError

    def create_job(self, key: str | None, body: Any) -> R:
        """``POST /v1/jobs`` with ``Idempotency-Key: key`` (``None``: no header)."""
        headers = {} if key is None else {"Idempotency-Key": key}
        return self._send("POST", "/v1/jobs", json_body=body, headers=headers)

    def get_job(self, job_id: str) -> R:
        """``GET /v1/jobs/{job_id}``."""
        return self._send("GET", f"/v1/jobs/{_path_id(job_id)}")

    def start_attempt(self, job_id: str, provider: str) -> R:
        """``POST /v1/jobs/{job_id}/attempts``."""
        return self._send(
            "POST", f"/v1/jobs/{_path_id(job_id)}/attempts", json_body={"provider": provider}
        )

    def list_attempts(self, job_id: str) -> R:
        """``GET /v1/jobs/{job_id}/attempts`` (oldest first)."""
        return self._send("GET", f"/v1/jobs/{_path_id(job_id)}/attempts")

    def post_event(self, attempt_id: str, event: Mapping[str, Any]) -> R:
        """``POST /v1/attempts/{attempt_id}/events`` with ``event`` = ``{"type": …, …}``."""
        return self._send(
            "POST", f"/v1/attempts/{_path_id(attempt_id)}/events", json_body=dict(event)
        )

    def list_races(self, job_id: str) -> R:
        """``GET /v1/jobs/{job_id}/races``: the job's lost claims."""
        return self._send("GET", f"/v1/jobs/{_path_id(job_id)}/races")

    def healthz(self) -> R:
        """``GET /healthz``."""
        return self._send("GET", "/healthz")

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> R:
        """Any request (raw ``content`` bytes or a JSON body): for probing the edges."""
        return self._send(method, path, json_body=json_body, content=content, headers=headers)


def _build(
    base: httpx.Client | httpx.AsyncClient,
    method: str,
    path: str,
    json_body: Any,
    content: bytes | None,
    headers: Mapping[str, str] | None,
) -> httpx.Request:
    hdrs = dict(headers or {})
    if content is None and json_body is not None:
        content = json.dumps(json_body, separators=(",", ":"), ensure_ascii=False).encode()
        hdrs.setdefault("Content-Type", "application/json")
    return base.build_request(method, path, content=content, headers=hdrs)


def _reply(response: httpx.Response) -> Reply:
    try:
        body: Any = response.json() if response.content else None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # nested too deeply
        body = response.text
    return Reply(response.status_code, body, response.headers)


def _failure(exc: httpx.TransportError, base_url: httpx.URL) -> TransportFailure:
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    # a bounded transport's error (harness.target.bounded) says which limit, and how much
    detail = getattr(exc, "detail", "")
    return TransportFailure(
        f"no response from {base_url}: {type(exc).__name__}" + (f": {detail}" if detail else "")
        + (" (the request was not sent)" if never_sent else " (the outcome is unknown)"),
        maybe_applied=not never_sent,
    )


def _headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class HarnessClient(_Api[Reply]):
    """The blocking client; one instance is safe to share between threads."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        limits: httpx.Limits | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url,
            headers=_headers(token),
            transport=transport,
            timeout=timeout,
            verify=tls_for(base_url),
            limits=limits or httpx.Limits(max_connections=200, max_keepalive_connections=200),
        )

    def _send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> Reply:
        request = _build(self._http, method, path, json_body, content, headers)
        try:
            return _reply(self._http.send(request))
        except httpx.TransportError as exc:
            raise _failure(exc, self._http.base_url) from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncHarnessClient(_Api[Awaitable[Reply]]):
    """The asyncio client: every method returns an awaitable :class:`Reply`."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
        limits: httpx.Limits | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=_headers(token),
            transport=transport,
            timeout=timeout,
            verify=tls_for(base_url),
            limits=limits or httpx.Limits(max_connections=200, max_keepalive_connections=200),
        )

    def _send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> Awaitable[Reply]:
        return self._asend(_build(self._http, method, path, json_body, content, headers))

    async def _asend(self, request: httpx.Request) -> Reply:
        try:
            return _reply(await self._http.send(request))
        except httpx.TransportError as exc:
            raise _failure(exc, self._http.base_url) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
