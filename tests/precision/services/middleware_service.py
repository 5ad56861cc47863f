"""Jobs-only services of the kind users run: a FastAPI handler behind a real idempotency
middleware from PyPI, configured the way the middleware's own README says.

- ``POST /orders`` (the handler): works ``--work-ms``, then creates an order — the side effect,
  counted by ``GET /_stats`` — and answers ``201 {"order": {"id", "state"}}``.
- ``GET /orders/{id}``: the order.
- ``POST /_faults/raise-next``: the next order's handler *raises* (the ASGI server answers 500
  and closes the connection); ``POST /_faults/500-next``: it *returns* a JSON 500 instead.
  Neither creates an order.

Middlewares (``--middleware``):
- ``idempotency-key``: ``fastapi-idempotency-key`` (``IdempotencyMiddleware``, ``MemoryBackend``)
- ``fastapi-idempotency``: ``fastapi-idempotency`` (``IdempotencyMiddleware``, ``MemoryStore``,
  ``path_prefix="/orders"`` so the fault hooks are not deduplicated by its automatic mode)
- ``idempotency-header``: ``asgi-idempotency-header`` (``IdempotencyHeaderMiddleware``,
  ``MemoryBackend``)

Servers (``--server``): ``uvicorn`` (httptools, uvloop), ``uvicorn-h11`` (h11, asyncio) or
``hypercorn`` (asyncio). After a handler raised, the ASGI server answers 500 and closes the
keep-alive connection; ``--report-ms N`` makes it close N ms after the 500 (the exception is
reported first, as an error tracker would), so a client's next request on that connection is
always written before the close: the race a client meets sometimes, made to happen every time.

Run: ``python -m tests.precision.services.middleware_service --middleware idempotency-key``.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests.precision.services.common import announce, service_args


def handler_app(work_ms: float) -> FastAPI:
    """The user's handler: orders in memory, a side-effect counter, the two fault hooks."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    orders: dict[str, dict[str, Any]] = {}
    numbers = itertools.count(1)
    armed: list[str] = []

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/_stats")
    async def stats() -> dict[str, int]:
        return {"orders": len(orders)}

    @app.post("/_faults/raise-next")
    async def raise_next() -> dict[str, bool]:
        armed.append("raise")
        return {"armed": True}

    @app.post("/_faults/500-next")
    async def return_500_next() -> dict[str, bool]:
        armed.append("json500")
        return {"armed": True}

    @app.post("/orders", status_code=201)
    async def create_order(body: dict[str, Any]) -> Any:
        await asyncio.sleep(work_ms / 1000)
        if armed:
            fault = armed.pop(0)
            if fault == "raise":
                raise RuntimeError("the order handler failed (injected)")
            return JSONResponse({"error": {"type": "internal", "message": "injected"}},
                                status_code=500)
        order_id = f"ord_{next(numbers):06d}"
        orders[order_id] = {"id": order_id, "state": "created", "request": body}
        return {"order": {"id": order_id, "state": "created"}}

    @app.get("/orders/{order_id}")
    async def get_order(order_id: str) -> Any:
        order = orders.get(order_id)
        if order is None:
            return JSONResponse({"error": {"type": "not_found"}}, status_code=404)
        return {"order": {"id": order["id"], "state": order["state"]}}

    return app


def with_middleware(app: FastAPI, name: str) -> FastAPI:
    if name == "idempotency-key":
        from fastapi_idempotency_key import IdempotencyMiddleware, MemoryBackend

        app.add_middleware(IdempotencyMiddleware, backend=MemoryBackend(),
                           header_name="Idempotency-Key", default_ttl=86400)
    elif name == "fastapi-idempotency":
        from fastapi_idempotency import IdempotencyMiddleware as Middleware
        from fastapi_idempotency import MemoryStore

        app.add_middleware(Middleware, store=MemoryStore(), path_prefix="/orders")
    elif name == "idempotency-header":
        from idempotency_header_middleware import IdempotencyHeaderMiddleware
        from idempotency_header_middleware.backends.memory import MemoryBackend as Memory

        app.add_middleware(IdempotencyHeaderMiddleware, backend=Memory())
    else:
        raise SystemExit(f"unknown middleware {name!r}")
    return app


def report_exceptions(app: Any, report_ms: float) -> Any:
    """Outermost: an exception reaches the server (which closes the connection) ``report_ms``
    after Starlette's error middleware sent the 500, and a request that arrives on that
    connection meanwhile is never processed: it is held until the connection is gone. That is
    the window in which a real server's close races a client's next request, made wide."""
    closing: dict[Any, asyncio.Event] = {}

    async def reporting(scope: Any, receive: Any, send: Any) -> None:
        connection = scope.get("client")
        held = closing.get(connection) if scope["type"] == "http" else None
        if held is not None:
            await held.wait()
            await _until_disconnected(receive)
            return
        try:
            await app(scope, receive, send)
        except Exception:
            closing[connection] = event = asyncio.Event()
            await asyncio.sleep(report_ms / 1000)
            # The raise below makes the server close the connection in this same step; the
            # held requests run after it, and a later connection from this port is not held.
            del closing[connection]
            event.set()
            raise

    return reporting


async def _until_disconnected(receive: Any) -> None:
    """Read the held request's messages until the server reports the connection closed."""
    async with asyncio.timeout(5):
        while (await receive())["type"] != "http.disconnect":
            pass


def serve(app: Any, server: str, host: str, port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    url = f"http://{host}:{sock.getsockname()[1]}"
    if server.startswith("uvicorn"):
        import uvicorn

        h11 = server == "uvicorn-h11"
        config = uvicorn.Config(app, log_level="critical", access_log=False, lifespan="off",
                                http="h11" if h11 else "httptools",
                                loop="asyncio" if h11 else "uvloop")
        announce(url)
        uvicorn.Server(config).run(sockets=[sock])
        return
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.loglevel = "CRITICAL"
    config.accesslog = None
    announce(url)
    asyncio.run(hypercorn_serve(app, config))


def main() -> None:
    parser = service_args(__doc__.splitlines()[0])
    parser.add_argument("--middleware", required=True,
                        choices=["idempotency-key", "fastapi-idempotency", "idempotency-header"])
    parser.add_argument("--server", default="uvicorn",
                        choices=["uvicorn", "uvicorn-h11", "hypercorn"])
    parser.add_argument("--work-ms", type=float, default=20.0)
    parser.add_argument("--report-ms", type=float, default=0.0)
    args = parser.parse_args()
    app: Any = with_middleware(handler_app(args.work_ms), args.middleware)
    if args.report_ms:
        app = report_exceptions(app, args.report_ms)
    serve(app, args.server, args.host, args.port)


if __name__ == "__main__":
    main()
