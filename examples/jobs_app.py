"""The business half both example services share: a jobs-only API with no idempotency of its own.

``POST /jobs`` does some work (``work_ms``), then inserts a row into ``jobs``: that row is the
side effect an idempotency layer must not repeat. ``GET /jobs/{id}`` reads a job,
``GET /_stats`` counts the rows (the side-effect counter a target profile can name),
``POST /_faults/fail-next`` makes the next ``POST /jobs`` fail with a JSON 500 before it writes
anything (the handler fault a profile can name; ``--fail-file PATH`` does the same when that
file exists, for profiles that inject faults with a command), ``POST /_faults/raise-next`` makes
it *raise* instead: the server's error middleware answers 500, the exception reaches the server,
and uvicorn closes the kept-alive connection (``--report-ms``: how long the error reporter works
before that, as a synchronous Sentry-style report would). ``GET /healthz`` answers 200.

The idempotency layer is a plain ASGI middleware wrapped around this app: see
``correct_service.py`` and ``gap_service.py``. Owners come from ``Authorization: Bearer <owner>``
(a toy: the token *is* the owner name; ``anonymous`` without one).

The helpers at the bottom (``read_body``, ``call_app``, ``respond``, ``canonical``) are what a
middleware needs: read the request body once, run the app and capture its response, answer.
Standard library + Starlette + uvicorn only: this file stands for *your* service, not for
failover-harness.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, NoReturn

HINTS = {"serve": " (the Redis examples: [explore], which includes it)"}


def missing_extra(extra: str, exc: ImportError) -> NoReturn:
    """An example started without its extra: say which to install, exit 2, no traceback."""
    name = exc.name or str(exc)
    print(f"error: {Path(sys.argv[0]).name} needs the Python package {name!r}, which is not "
          f"installed\n  fix: pip install 'failover-harness[{extra}]'" + HINTS.get(extra, ""),
          file=sys.stderr)
    raise SystemExit(2)


try:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.middleware.errors import ServerErrorMiddleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # the example services run on the [serve] extra
    missing_extra("serve", exc)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, payload TEXT NOT NULL, created_at REAL NOT NULL
);
"""


class HandlerFailed(Exception):
    """The injected failure: the handler gave up before writing anything."""


class HandlerRaised(RuntimeError):
    """The injected crash: an exception nobody handles (the server's error middleware answers)."""


def open_db(path: str | Path) -> sqlite3.Connection:
    """One SQLite connection in autocommit mode, used only from the event loop's thread."""
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, fast commits
    db.executescript(SCHEMA)
    return db


def owner_of(headers: Any) -> str:
    """The owner: ``Authorization: Bearer <owner>`` (a toy scheme), else ``anonymous``."""
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else "anonymous"


def jobs_app(db: sqlite3.Connection, *, work_ms: float = 20.0,
             fail_file: Path | None = None) -> Starlette:
    """The jobs API over ``db``; the handler takes ``work_ms`` before it writes its row."""
    faults = {"fail_next": False, "raise_next": False}

    async def create_job(request: Request) -> Response:
        # A middleware that already parsed the body shares it (request.state.json); the handler
        # then works on that very dict, as handlers in frameworks with body caching do.
        body = getattr(request.state, "json", None)
        if body is None:
            body = await request.json()
        await asyncio.sleep(work_ms / 1000)  # the work: pricing, a payment call, a queue push…
        if faults["raise_next"]:
            faults["raise_next"] = False
            raise HandlerRaised("injected crash: the handler raised")
        if faults["fail_next"] or (fail_file is not None and fail_file.exists()):
            faults["fail_next"] = False
            if fail_file is not None:
                fail_file.unlink(missing_ok=True)
            raise HandlerFailed("injected failure")
        if isinstance(body, dict):
            body.setdefault("priority", "normal")  # defaults filled in place
        job_id = f"job_{uuid.uuid4().hex[:16]}"
        db.execute("INSERT INTO jobs (id, owner, payload, created_at) VALUES (?, ?, ?, ?)",
                   (job_id, owner_of(request.headers), json.dumps(body), time.time()))
        return JSONResponse({"id": job_id, "status": "queued", "request": body}, 201)

    async def get_job(request: Request) -> Response:
        row = db.execute("SELECT id, owner, payload FROM jobs WHERE id = ?",
                         (request.path_params["job_id"],)).fetchone()
        if row is None or row[1] != owner_of(request.headers):
            return JSONResponse({"error": "not_found"}, 404)
        return JSONResponse({"id": row[0], "status": "queued", "request": json.loads(row[2])})

    async def stats(request: Request) -> Response:
        (count,) = db.execute("SELECT count(*) FROM jobs").fetchone()
        return JSONResponse({"jobs": count})

    async def fail_next(request: Request) -> Response:
        faults["fail_next"] = True
        return Response(status_code=204)

    async def raise_next(request: Request) -> Response:
        faults["raise_next"] = True
        return Response(status_code=204)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def handler_failed(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "handler_failed", "detail": str(exc)}, 500)

    return Starlette(
        routes=[
            Route("/jobs", create_job, methods=["POST"]),
            Route("/jobs/{job_id}", get_job, methods=["GET"]),
            Route("/_stats", stats, methods=["GET"]),
            Route("/_faults/fail-next", fail_next, methods=["POST"]),
            Route("/_faults/raise-next", raise_next, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        exception_handlers={HandlerFailed: handler_failed},
    )


def served(app: ASGIApp, *, report_ms: float = 0.0) -> ASGIApp:
    """``app`` as a FastAPI/Starlette service runs it: an idempotency middleware *inside* the
    server-error middleware (which answers 500 and re-raises), and an error reporter outside
    that works ``report_ms`` before the exception reaches the server (which then closes the
    connection without ``Connection: close``: the 500 is already on the wire). A request a
    client writes to that connection meanwhile is held until the close and never handled: the
    race a real client meets now and then, made to happen every time."""
    errors = ServerErrorMiddleware(app)
    closing: dict[Any, asyncio.Event] = {}

    async def reported(scope: Scope, receive: Receive, send: Send) -> None:
        connection = scope.get("client")
        held = closing.get(connection) if scope["type"] == "http" else None
        if held is not None:  # written to the connection being closed
            await held.wait()
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        try:
            await errors(scope, receive, send)
        except Exception:
            if report_ms:
                closing[connection] = event = asyncio.Event()
                await asyncio.sleep(report_ms / 1000)  # report the crash, then let it go on
                del closing[connection]
                event.set()
            raise

    return reported


# -- what a middleware needs ------------------------------------------------------------------
def canonical(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, integral numbers without ``.0`` (so ``1`` and
    ``1.0`` are the same). A stand-in for RFC 8785 (the ``rfc8785`` package does it fully)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def fingerprint(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def call_app(app: ASGIApp, scope: Scope, body: bytes) -> tuple[int, list[Any], bytes]:
    """Run ``app`` on a request whose body was already read; capture its whole response."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    status, headers, chunks = 500, [], []

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, headers, b"".join(chunks)


async def respond(send: Send, status: int, body: bytes | dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"),
           (b"content-length", str(len(content)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": content})


def build_parser(description: str,
                 add_options: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """The command line both services share, plus the service's own ``add_options``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8800, help="0 picks a free port")
    parser.add_argument("--db", default="jobs.db", help="SQLite file (created if absent)")
    parser.add_argument("--work-ms", type=float, default=20.0,
                        help="how long the handler works before it writes its row")
    parser.add_argument("--fail-file", type=Path, default=None,
                        help="when this file exists, the next POST /jobs fails (and removes it)")
    parser.add_argument("--report-ms", type=float, default=0.0,
                        help="after the handler raised: how long the error reporter works "
                        "before the server closes the connection")
    add_options(parser)
    return parser


def serve(build: Callable[[argparse.Namespace], ASGIApp], parser: argparse.ArgumentParser) -> None:
    """Parse the command line, bind the socket, print ``listening on <url>``, serve."""
    args = parser.parse_args()
    app = build(args)
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it a keep-alive response waits 40 ms for a delayed ACK (Nagle)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    host, port = sock.getsockname()[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
