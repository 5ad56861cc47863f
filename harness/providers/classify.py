"""Provider call errors and their classification (DESIGN.md rule 9): ``failed`` or ``unknown``.

::

    ProviderCallError (HarnessError)          .classification, .status, .retry_after_s, .code
    ├── failed   the request never left, or the provider refused it: safe to try another
    │            connect error / connect timeout / pool timeout, 4xx (incl. 408, 429),
    │            5xx other than 504 (incl. Anthropic's 529 overloaded)
    └── unknown  the request may have been processed: never fail over blindly
                 read or write timeout, reset or close after the request was sent, 504,
                 a 2xx whose body cannot be read

``retry-after`` and ``retry-after-ms`` are surfaced as :attr:`ProviderCallError.retry_after_s`;
nothing here ever sleeps on them.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Literal

import httpx

from harness.domain.errors import HarnessError
from harness.providers.secrets import redact

Classification = Literal["failed", "unknown"]

_EXPLAIN = {
    "failed": "the request was not processed; another provider may be tried",
    "unknown": "the outcome is unknown; the attempt must be resolved before any other is started",
}


class ProviderCallError(HarnessError):
    """A provider call did not produce a reply."""

    code = "provider_call_failed"  # the class default; instances carry the provider's own code

    def __init__(
        self,
        message: str,
        *,
        classification: Classification,
        provider_id: str = "",
        status: int | None = None,
        code: str | None = None,
        retry_after_s: float | None = None,
        request_id: str | None = None,
        cause: str = "",
    ) -> None:
        self.classification: Classification = classification
        self.provider_id = provider_id
        self.status = status
        self.code = code or cause or "provider_error"  # type: ignore[misc]
        self.retry_after_s = retry_after_s
        self.request_id = request_id
        self.cause = cause
        prefix = f"{provider_id}: " if provider_id else ""
        text = f"{prefix}{message} [{classification}: {_EXPLAIN[classification]}]"
        if retry_after_s is not None:
            text += f"; the provider asks to retry after {retry_after_s:g} s"
        if request_id:
            text += f"; request id {request_id}"
        super().__init__(redact(text))

    def to_error(self) -> dict[str, object]:
        """The ``error`` object for an attempt's ``failed`` event (redacted)."""
        out: dict[str, object] = {"code": str(self.code), "message": self.message,
                                  "classification": self.classification}
        for name in ("status", "retry_after_s", "request_id"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def classify_status(status: int) -> Classification:
    """``failed`` for 4xx and 5xx except 504; ``unknown`` for 504 (the gateway gave up waiting)."""
    if status == 504:
        return "unknown"
    if 400 <= status <= 599:
        return "failed"
    raise ValueError(f"HTTP {status} is not an error status")


# Transport errors, most specific first: where the request may already be at the provider.
_NOT_SENT: tuple[tuple[type[Exception], str], ...] = (
    (httpx.ConnectTimeout, "connect_timeout"),
    (httpx.PoolTimeout, "pool_timeout"),
    (httpx.ConnectError, "connect_error"),
    (httpx.UnsupportedProtocol, "unsupported_protocol"),
    (httpx.LocalProtocolError, "local_protocol_error"),
    (httpx.InvalidURL, "invalid_url"),
)
_MAYBE_SENT: tuple[tuple[type[Exception], str], ...] = (
    (httpx.ReadTimeout, "read_timeout"),
    (httpx.WriteTimeout, "write_timeout"),
    (httpx.RemoteProtocolError, "connection_closed"),
    (httpx.ReadError, "connection_reset"),
    (httpx.WriteError, "write_error"),
)


def classify_transport_error(exc: Exception) -> tuple[Classification, str]:
    """Classification and a short cause for an httpx transport error (or any other error)."""
    for kind, cause in _NOT_SENT:
        if isinstance(exc, kind):
            return "failed", cause
    for kind, cause in _MAYBE_SENT:
        if isinstance(exc, kind):
            return "unknown", cause
    # Anything else happened while the request was in flight: we cannot say it was not sent.
    return "unknown", "transport_error"


def transport_error(exc: Exception, *, provider_id: str) -> ProviderCallError:
    """The ProviderCallError for a transport-level failure (message redacted, no traceback)."""
    classification, cause = classify_transport_error(exc)
    detail = str(exc) or type(exc).__name__
    return ProviderCallError(
        f"{cause.replace('_', ' ')} ({type(exc).__name__}: {detail})",
        classification=classification, provider_id=provider_id, cause=cause,
    )


def retry_after_seconds(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds the provider asks us to wait: ``retry-after-ms``, else ``retry-after``, else None.

    ``retry-after`` may be delta-seconds or an HTTP-date. Nothing here sleeps.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# Where a call cannot have reached a model: the network, the address or the key is wrong.
# Such a call is no evidence about what the model answers (certification leaves it out).
_UNREACHED_CAUSES = frozenset({
    "connect_error", "connect_timeout", "pool_timeout", "unsupported_protocol",
    "local_protocol_error", "invalid_url",
})
_UNREACHED_STATUS = {
    401: "the key was refused (HTTP 401)",
    403: "the key is not allowed to use it (HTTP 403)",
    404: "no such endpoint or model (HTTP 404)",
    407: "a proxy asked for credentials (HTTP 407)",
}
_KEY_STATUS = frozenset({401, 403, 407})
GATEWAY_UNREACHED = "the gateway could not connect to the provider"
# LiteLLM without a database answers 400 "No connected db." to a key that is not its master key
GATEWAY_KEY_REFUSED = "the gateway refused the key"
# every call of a certification refused with a 4xx before any answer (contracts/judgement.py)
REFUSED_EVERY_CALL = "every call was refused before any answer"
_CONNECT_WORDS = ("connection error", "apiconnectionerror", "connecterror", "connection refused",
                  "name or service not known", "nodename nor servname")
_DNS = ("name or service not known", "nodename nor servname", "getaddrinfo", "no address",
        "temporary failure in name resolution", "name resolution")
_TLS = ("ssl", "certificate", "tls")


def unreached(exc: ProviderCallError) -> str | None:
    """Why this call cannot have reached a model (``None``: it may have): a DNS, connect or
    TLS failure, a request never sent, the provider refusing the key or the address (401, 403,
    404, 407), or a gateway saying so about the provider behind it (a 5xx naming a connection
    error; LiteLLM's 400 "No connected db." for a key it does not know). Short: "DNS lookup
    failed", "the key was refused (HTTP 401)"."""
    if exc.status is not None:
        text = exc.message.lower()
        if exc.status >= 500 and any(word in text for word in _CONNECT_WORDS):
            return GATEWAY_UNREACHED  # a gateway (LiteLLM) says it could not connect upstream
        if exc.status == 400 and "no connected db" in text:
            return GATEWAY_KEY_REFUSED
        return _UNREACHED_STATUS.get(exc.status)
    if exc.cause not in _UNREACHED_CAUSES:
        return None
    text = exc.message.lower()
    if any(word in text for word in _DNS):
        return "DNS lookup failed"
    if any(word in text for word in _TLS):
        return "TLS handshake failed"
    return {
        "connect_timeout": "the connection timed out",
        "pool_timeout": "the request was never sent (no free connection)",
        "invalid_url": "the address is not a valid URL",
        "unsupported_protocol": "the address's scheme is not http or https",
    }.get(exc.cause, "the connection was refused or failed")


def unreached_setting(text: str) -> str:
    """Which setting to check for a text holding an :func:`unreached` reason: ``key``,
    ``model`` (a 404: the address or the model name), ``upstream`` (behind a gateway: the
    provider's address as the gateway has it), ``request`` (every call refused: the headers
    the server asks for) or ``address`` (network, DNS, TLS, the URL)."""
    if REFUSED_EVERY_CALL in text and not any(
            f"HTTP {status}" in text for status in (*_KEY_STATUS, 404)):
        return "request"
    if GATEWAY_KEY_REFUSED in text or any(
            _UNREACHED_STATUS[status] in text for status in _KEY_STATUS):
        return "key"
    if GATEWAY_UNREACHED in text:
        return "upstream"
    return "model" if _UNREACHED_STATUS[404] in text else "address"
