"""A small service whose API is not API.md, for target-profile tests: IETF idempotency-key
draft style (422 for a reused key, 409 while the first request is in flight), ``X-Api-Key``
auth, ``/orders`` paths, ``{"data": …}`` bodies. It runs over a real store (reference or
mutant) on a real loopback socket."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from harness.domain import HarnessError, IdempotencyKeyReused, Intent
from harness.providers.fake_server import bind_socket
from harness.store import SqlStore

IN_FLIGHT_ANSWERS = 2  # duplicates of a new key told "still in progress" before the answer


def draft_app(store: SqlStore, keys: dict[str, str]) -> FastAPI:
    app = FastAPI()
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def owner(request: Request) -> str | None:
        return keys.get(request.headers.get("x-api-key", ""))

    def order(job: Any) -> dict[str, Any]:
        return {"data": {"id": job.id, "state": "new" if job.status == "pending"
                         else job.status.value}}

    @app.post("/orders")
    async def create(request: Request) -> JSONResponse:
        who = owner(request)
        if who is None:
            return JSONResponse({"error": {"type": "unauthorized"}}, 401)
        key = request.headers.get("idempotency-key", "")
        with lock:
            seen[f"{who}/{key}"] += 1
            duplicate_in_flight = 1 < seen[f"{who}/{key}"] <= 1 + IN_FLIGHT_ANSWERS
        if duplicate_in_flight:
            return JSONResponse({"error": {"type": "request_in_progress"}}, 409)
        try:
            result = store.create_job(who, key, Intent.from_json(json.loads(await request.body())))
        except IdempotencyKeyReused:
            return JSONResponse({"error": {"type": "key_reused"}}, 422)
        except HarnessError as exc:
            return JSONResponse({"error": {"type": exc.code}}, exc.http_status)
        return JSONResponse(order(result.job), 201 if result.created else 200)

    @app.get("/orders/{job_id}")
    async def read(job_id: str, request: Request) -> JSONResponse:
        who = owner(request)
        if who is None:
            return JSONResponse({"error": {"type": "unauthorized"}}, 401)
        try:
            return JSONResponse(order(store.get_job(who, job_id)))
        except HarnessError as exc:
            return JSONResponse({"error": {"type": exc.code}}, exc.http_status)

    return app


class LoopbackServer:
    """uvicorn on a socket bound and listening before the thread starts (no readiness wait)."""

    def __init__(self, app: FastAPI) -> None:
        self.sock = bind_socket("127.0.0.1", 0)  # IPPROTO_TCP: asyncio then sets TCP_NODELAY
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()
