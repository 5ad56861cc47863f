"""The provider client core: request and reply types and one async call path, no hidden retries.

A wire format (``openai_chat``, ``anthropic_messages``) subclasses :class:`ProviderClient` and
says how to build the body and headers and how to read a reply or an error body. Everything
else — timeouts, classification, redaction, the sync wrapper — is written once, here.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from harness.domain.errors import InputError
from harness.providers.classify import (
    ProviderCallError,
    classify_status,
    retry_after_seconds,
    transport_error,
)
from harness.providers.config import ProviderConfig
from harness.providers.secrets import Secret, redact

_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """What to ask: a system prompt, a user message, and the JSON Schema the answer must meet."""

    system: str
    user: str
    schema: dict[str, Any]
    schema_name: str = "answer"
    seed: int | None = None  # sent where the API takes one (openai-chat), so samples differ

    def __post_init__(self) -> None:
        if not isinstance(self.schema, dict):
            raise InputError("ProviderRequest.schema must be a JSON Schema object (a dict)")
        if not _SCHEMA_NAME.fullmatch(self.schema_name):
            raise InputError(
                f"schema_name {self.schema_name!r} must be 1–64 letters, digits, '_' or '-' "
                "(both wire formats require it)"
            )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts the provider reported (None where it reported nothing)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ProviderReply:
    """What came back: the raw text, the parsed JSON object (None if not an object), metadata.

    ``parsed`` is strict: ``json.loads(text)`` must be a JSON object. A fenced or prose answer
    gives ``parsed=None``; the caller (contract checks, the failover runner) decides what that
    means. ``finish_reason`` is the provider's own value (OpenAI ``finish_reason``, Anthropic
    ``stop_reason``).
    """

    text: str
    parsed: dict[str, Any] | None
    finish_reason: str | None
    refusal: str | None
    usage: Usage
    request_id: str | None
    latency_s: float
    provider_id: str = ""
    model: str | None = None
    status: int = 200
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None if it is not exactly one."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json can parse
        return None
    return value if isinstance(value, dict) else None


class _Borrowed(httpx.AsyncBaseTransport):
    """A caller's transport that our short-lived clients use but never close."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None


class ProviderClient(ABC):
    """One provider, spoken to in its own wire format. ``await complete(req)``; no retries.

    Keyword-only construction through :func:`harness.providers.clients.client_for`, which reads
    the key from the environment. An injected ``transport`` (respx, the fake providers, a
    recorder) replaces the network; without one a plain ``httpx.AsyncHTTPTransport(retries=0)``
    is used.
    """

    kind: ClassVar[str]
    endpoint: ClassVar[str]  # appended to base_url
    request_id_header: ClassVar[str]

    def __init__(
        self,
        cfg: ProviderConfig,
        *,
        api_key: Secret | None,
        base_url: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.cfg = cfg
        self.transport = transport
        self._api_key = api_key
        self.url = (base_url or cfg.base_url).rstrip("/") + self.endpoint
        self._timeout = httpx.Timeout(
            connect=cfg.timeout.connect, read=cfg.timeout.read,
            write=cfg.timeout.read, pool=cfg.timeout.connect,
        )
        self._headers = {"content-type": "application/json", "accept": "application/json",
                         "user-agent": "failover-harness", **(headers or {}),
                         **self.auth_headers()}  # extra headers (providers.yaml) never replace auth
        self._http: httpx.AsyncClient | None = None
        self._http_loop: asyncio.AbstractEventLoop | None = None
        self._users = 0

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(id={self.cfg.id!r}, url={self.url!r}, model={self.cfg.model!r})"

    # -- what a wire format defines ------------------------------------------------------------

    @abstractmethod
    def auth_headers(self) -> dict[str, str]:
        """The authentication and version headers (built from the Secret, never logged)."""

    @abstractmethod
    def build_request_body(self, req: ProviderRequest) -> dict[str, Any]:
        """The JSON body of the request (where the system prompt goes depends on the kind)."""

    @abstractmethod
    def read_reply(self, data: dict[str, Any], req: ProviderRequest) -> dict[str, Any]:
        """From a 2xx body: text, parsed, finish_reason, refusal, usage, model (KeyError/TypeError
        if the body is not what the wire format promises)."""

    @abstractmethod
    def read_error(self, data: Any) -> tuple[str | None, str | None]:
        """From an error body: the provider's (code, message), or (None, None)."""

    # -- the one call path ---------------------------------------------------------------------

    def _new_http(self) -> httpx.AsyncClient:
        transport = (_Borrowed(self.transport) if self.transport is not None
                     else httpx.AsyncHTTPTransport(retries=0))
        return httpx.AsyncClient(transport=transport, timeout=self._timeout,
                                 follow_redirects=False)

    async def complete(self, req: ProviderRequest) -> ProviderReply:
        """Send one request and return the reply; :class:`ProviderCallError` otherwise.

        Inside ``async with client:`` calls share one connection pool; outside, each call
        opens and closes its own connections (nothing is left open when the loop ends).
        """
        if self._http is not None and self._http_loop is asyncio.get_running_loop():
            return await self._send(self._http, req)
        async with self._new_http() as http:
            return await self._send(http, req)

    async def _send(self, http: httpx.AsyncClient, req: ProviderRequest) -> ProviderReply:
        content = json.dumps(self.build_request_body(req), ensure_ascii=False).encode()
        pid = self.cfg.id
        started = time.perf_counter()
        try:
            response = await http.post(self.url, content=content, headers=self._headers)
        except httpx.HTTPError as exc:
            raise transport_error(exc, provider_id=pid) from None
        latency = time.perf_counter() - started
        request_id = response.headers.get(self.request_id_header)
        status = response.status_code
        if not 200 <= status < 300:
            raise self._status_error(response, request_id)
        try:
            data = response.json()
            fields = self.read_reply(data, req)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError,
                RecursionError) as exc:
            raise ProviderCallError(
                f"HTTP {status} but the body is not a {self.kind} reply ({type(exc).__name__})",
                classification="unknown", provider_id=pid, status=status,
                code="invalid_response", request_id=request_id,
            ) from None
        return ProviderReply(request_id=request_id, latency_s=latency, provider_id=pid,
                             status=status, raw=data, **fields)

    def _status_error(self, response: httpx.Response, request_id: str | None) -> ProviderCallError:
        status = response.status_code
        try:
            code, message = self.read_error(response.json())
        except ValueError:
            code, message = None, None
        if message is None:
            message = response.text[:200].strip() or response.reason_phrase
        code = code or f"http_{status}"
        classification = classify_status(status) if status >= 400 else "failed"
        # A gateway may put the status itself in the code ("HTTP 500 500"): say it once.
        named = "" if str(code) in (str(status), f"http_{status}") else f" {code}"
        return ProviderCallError(
            f"HTTP {status}{named}: {redact(message)}",
            classification=classification, provider_id=self.cfg.id, status=status, code=code,
            retry_after_s=retry_after_seconds(response.headers), request_id=request_id,
        )

    def complete_sync(self, req: ProviderRequest) -> ProviderReply:
        """Blocking :meth:`complete` for scripts and threads (not inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("complete_sync() called inside an event loop: await complete()")
        return asyncio.run(self.complete(req))

    async def __aenter__(self) -> ProviderClient:
        """Open a connection pool for this event loop (nested entries share it)."""
        loop = asyncio.get_running_loop()
        if self._http is None or self._http_loop is not loop:
            self._http, self._http_loop, self._users = self._new_http(), loop, 0
        self._users += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._users -= 1
        if self._users <= 0:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            http, self._http, self._http_loop, self._users = self._http, None, None, 0
            await http.aclose()
