"""Record / replay: every certification exchange saved as a cassette, and served back offline.

A cassette holds one (provider, contract) pair's exchanges, keyed by ``<golden id>#<sample>``.
The key travels in a context variable set by the certifier around each call, so the wire
request itself is exactly what production sends. Both transports serve the client from the
captured exchange, so a live run and its replay look identical to the client: same status,
headers, body — and the same transport error at the same point (a cut-off body, a timeout).
Secrets are redacted from what is written (credential headers masked, key values removed).
"""

from __future__ import annotations

import contextvars
import json
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from harness.domain.clock import rfc3339
from harness.domain.errors import ConfigError
from harness.domain.fingerprint import canonical_json
from harness.providers.secrets import redact, redact_headers, redact_value

CASSETTE_VERSION = 1

# "<golden id>#<sample index>" of the exchange being made in this task.
exchange_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "harness_exchange_key", default=None
)


def cassette_path(root: Path, provider: str, contract: str) -> Path:
    return root / contract / f"{provider}.json"


@dataclass
class Cassette:
    """The recorded exchanges of one provider for one contract."""

    path: Path
    provider: str
    contract: str
    config_hash: str
    contract_hash: str
    recorded_at: str = ""
    exchanges: dict[str, dict[str, Any]] = field(default_factory=dict)
    salt: str = ""  # the run's seed salt: a replay sends the seeds the recording sent
    # "<golden id>#<sample>" → why it was not sent: the provider could not be reached (a
    # refused key, DNS…) and the certifier stopped calling it. Kept, so that the cassette of a
    # refusing provider replays: the replay refuses the same way and sends the same nothing.
    not_sent: dict[str, str] = field(default_factory=dict)

    def mark_not_sent(self, key: str, why: str) -> None:
        self.not_sent[key] = why

    def holds(self, key: str) -> bool:
        """An exchange was recorded under ``key``, or its not being sent was."""
        return key in self.exchanges or key in self.not_sent

    def write(self, now: datetime) -> None:
        data = {
            "cassette_version": CASSETTE_VERSION,
            "provider": self.provider,
            "contract": self.contract,
            "config_hash": self.config_hash,
            "contract_hash": self.contract_hash,
            "recorded_at": rfc3339(now),
            "salt": self.salt,
            "exchanges": {k: self.exchanges[k] for k in sorted(self.exchanges)},
            **({"not_sent": dict(sorted(self.not_sent.items()))} if self.not_sent else {}),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cassette.", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, self.path)

    @classmethod
    def read(cls, path: Path, *, provider: str, contract: str) -> Cassette:
        fix = f"record it: failover-harness certify --record --provider {provider} " \
              f"--contract {contract}"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"no cassette for provider {provider!r} and contract {contract!r}",
                file=str(path), fix=fix,
            ) from None
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            raise ConfigError(f"unreadable cassette: {exc}", file=str(path), fix=fix) from None
        if not isinstance(data, dict) or data.get("cassette_version") != CASSETTE_VERSION:
            raise ConfigError("not a cassette of this harness version", file=str(path), fix=fix)
        return cls(
            path, data["provider"], data["contract"], data["config_hash"], data["contract_hash"],
            data.get("recorded_at", ""), dict(data.get("exchanges", {})),
            str(data.get("salt", "")),
            {str(k): str(v) for k, v in dict(data.get("not_sent") or {}).items()},
        )


def _request_json(request: httpx.Request) -> dict[str, Any]:
    try:
        body: Any = json.loads(request.content or b"null")
    except ValueError:
        body = request.content.decode("utf-8", "replace")
    return {
        "method": request.method,
        "url": str(request.url),
        "headers": redact_headers(request.headers.items()),
        "body": redact_value(body),
    }


class _Played(httpx.AsyncByteStream):
    """A response body that yields the captured bytes, then raises the captured error, if any."""

    def __init__(self, body: bytes, error: BaseException | None) -> None:
        self.body, self.error = body, error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.body:
            yield self.body
        if self.error is not None:
            raise self.error


def _error_from(kind: str, message: str, request: httpx.Request) -> httpx.HTTPError:
    cls = getattr(httpx, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, httpx.TransportError)):
        cls = httpx.TransportError
    return cls(message, request=request)


def _serve(entry: dict[str, Any], request: httpx.Request) -> httpx.Response:
    """Turn a captured exchange back into what the transport did: a response or an error."""
    if "response" not in entry:
        err = entry["error"]
        raise _error_from(err["type"], err["message"], request)
    resp = entry["response"]
    body = resp["body"].encode("utf-8")
    stream_error = resp.get("stream_error")
    error = _error_from(stream_error["type"], stream_error["message"], request) \
        if stream_error else None
    headers = [(k, v) for k, v in resp["headers"].items() if k not in ("content-length",)]
    return httpx.Response(
        resp["status"], headers=headers, stream=_Played(body, error), request=request
    )


class RecordingTransport(httpx.AsyncBaseTransport):
    """Sends through ``inner`` and writes down every exchange under the current key."""

    def __init__(self, inner: httpx.AsyncBaseTransport, cassette: Cassette) -> None:
        self.inner, self.cassette = inner, cassette

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = exchange_key.get() or f"unkeyed-{len(self.cassette.exchanges)}"
        await request.aread()
        entry: dict[str, Any] = {"request": _request_json(request)}
        self.cassette.exchanges[key] = entry
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TransportError as exc:
            entry["error"] = {"type": type(exc).__name__, "message": redact(str(exc))}
            raise
        chunks: list[bytes] = []
        stream_error = None
        try:
            chunks.append(response.content)  # already read (an in-memory transport)
        except httpx.ResponseNotRead:
            try:
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
            except httpx.TransportError as exc:
                stream_error = {"type": type(exc).__name__, "message": redact(str(exc))}
            finally:
                await response.aclose()
        entry["response"] = {
            "status": response.status_code,
            "headers": redact_headers(response.headers.items()),
            "body": redact(b"".join(chunks).decode("utf-8", "replace")),
            **({"stream_error": stream_error} if stream_error else {}),
        }
        return _serve(entry, request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class CassetteMismatch(httpx.TransportError):
    """The request differs from the recorded one (the cassette is stale)."""


class ReplayTransport(httpx.AsyncBaseTransport):
    """Answers from a cassette; no network. A request the cassette does not hold is an error."""

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = exchange_key.get()
        entry = self.cassette.exchanges.get(key or "")
        if entry is None:
            raise CassetteMismatch(f"the cassette has no exchange {key!r}", request=request)
        await request.aread()
        now = _request_json(request)
        recorded = entry["request"]
        if canonical_json(now["body"]) != canonical_json(recorded["body"]) or (
            now["url"] != recorded["url"]
        ):
            raise CassetteMismatch(
                f"exchange {key!r}: the request differs from the recorded one", request=request
            )
        return _serve(entry, request)
