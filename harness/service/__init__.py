"""The reference HTTP service (API v1, ../shared/API.md) and its typed client.

The client (httpx) is imported on first use of a name below, so ``failover-harness serve``,
which imports :mod:`harness.service.app` (bare ASGI, on uvicorn), does not import httpx.
"""

from typing import Any as _Any

from harness.domain import lazy as _lazy

_EXPORTS = {
    "AsyncHarnessClient": "client",
    "HarnessClient": "client",
    "Reply": "client",
    "TransportFailure": "client",
}

__all__ = ["AsyncHarnessClient", "HarnessClient", "Reply", "TransportFailure"]


def __getattr__(name: str) -> _Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
