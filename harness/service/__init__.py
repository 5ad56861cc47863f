"""The reference HTTP service (API v1, ../shared/API.md) and its typed client.

Importing this package loads only the client (httpx); the app (bare ASGI, on uvicorn) is in
:mod:`harness.service.app` and is imported by ``failover-harness serve``.
"""

from harness.service.client import AsyncHarnessClient, HarnessClient, Reply, TransportFailure

__all__ = ["AsyncHarnessClient", "HarnessClient", "Reply", "TransportFailure"]
