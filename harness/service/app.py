"""The reference HTTP service: API v1 (../shared/API.md) as a FastAPI app over a Store.

``create_app(store, tokens)`` builds the app around an open store; ``app_from_env()`` is the
factory uvicorn imports in each worker process (``--workers N``), configured by the
environment that ``failover-harness serve`` sets. Store calls are synchronous and run in the
app's own thread pool (see :func:`store_threads`; the SQLite store keeps one connection per
thread); the event loop only reads bodies, validates, authenticates and writes replies.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from harness.extras import missing_extra

try:  # the `serve` extra: without it, an error that names it
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - exercised in a base-only interpreter
    raise (missing_extra(exc) or exc) from None

from harness import __version__
from harness.domain import EventType, HarnessError, Intent, InvalidIntent, NotFound
from harness.domain.errors import StoreError
from harness.domain.fingerprint import validate_idempotency_key
from harness.service import schemas as s
from harness.service.auth import TokenTable, Unauthenticated, load_tokens
from harness.service.payload import parse_json, read_body
from harness.store import Store, apply_event, open_store

log = logging.getLogger("harness.service")

ENV_DB = "HARNESS_SERVE_DB"
ENV_TOKENS_FILE = "HARNESS_TOKENS_FILE"
ENV_POOL_SIZE = "HARNESS_SERVE_POOL_SIZE"
DEFAULT_DB = "sqlite:///harness.db"

_ID_RE = re.compile(r"[\x21-\x7e]{1,255}")
T = TypeVar("T")


class ProblemResponse(JSONResponse):
    media_type = s.PROBLEM_MEDIA_TYPE


def problem_response(request: Request, error: HarnessError) -> ProblemResponse:
    body = error.to_problem()
    body["instance"] = request.url.path
    headers: dict[str, str] = {}
    if isinstance(error, Unauthenticated):
        headers["WWW-Authenticate"] = "Bearer"
    elif isinstance(error, StoreError):
        headers["Retry-After"] = "1"
    return ProblemResponse(body, status_code=error.http_status, headers=headers)


class _HttpProblem(HarnessError):
    """The HTTP request cannot be served."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.http_status = status  # type: ignore[misc]
        self.code = code  # type: ignore[misc]


class _StoreUnavailable(StoreError):
    """The store's database failed."""


def _install_error_handlers(app: FastAPI) -> None:
    async def on_harness_error(request: Request, exc: Exception) -> ProblemResponse:
        assert isinstance(exc, HarnessError)
        if isinstance(exc, StoreError):
            # The driver's text stays in the server log; the client learns only that it failed.
            log.warning("store error on %s %s: %s", request.method, request.url.path, exc.message)
            exc = _StoreUnavailable("the store is unavailable; retry the request later")
        return problem_response(request, exc)

    async def on_http_error(request: Request, exc: Exception) -> ProblemResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return problem_response(request, _HttpProblem(exc.status_code, code, str(exc.detail)))

    async def on_validation_error(request: Request, exc: Exception) -> ProblemResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return problem_response(request, InvalidIntent(f"{where}: {first.get('msg', 'invalid')}"))

    async def on_unexpected(request: Request, exc: Exception) -> ProblemResponse:
        log.error("internal error on %s %s: %s", request.method, request.url.path,
                  type(exc).__name__)
        return problem_response(request, _HttpProblem(500, "internal_error", "internal error"))

    app.add_exception_handler(HarnessError, on_harness_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(Exception, on_unexpected)


def _opaque_id(value: str, what: str) -> str:
    """A path id; one no store could hold (NUL, non-ASCII, too long) is simply not found."""
    if not _ID_RE.fullmatch(value):
        raise NotFound(f"{what} not found")
    return value


def _object(body: Any, fields: set[str], what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidIntent(f"the {what} body must be a JSON object")
    unknown = set(body) - fields
    if unknown:
        raise InvalidIntent(f"unknown field(s) {sorted(unknown)} in the {what} body")
    return body


_EVENT_TYPES = [e.value for e in EventType]
_EVENT_FIELDS = {
    EventType.DISPATCHED: {"type"},
    EventType.TIMED_OUT: {"type"},
    EventType.FAILED: {"type", "error"},
    EventType.SUCCEEDED: {"type", "result"},
    EventType.CANCELLED: {"type", "reason"},
}


def parse_event(body: Any) -> tuple[EventType, dict[str, Any]]:
    """An event body → its type and fields; 422 naming the field that is wrong."""
    if not isinstance(body, dict):
        raise InvalidIntent("the event body must be a JSON object like {\"type\": \"dispatched\"}")
    if "type" not in body:
        raise InvalidIntent("field 'type' is required")
    kind = body["type"]
    if kind not in _EVENT_TYPES:  # not a string, or not one we know
        raise InvalidIntent(f"field 'type' must be one of: {', '.join(_EVENT_TYPES)}")
    event = EventType(kind)
    _object(body, _EVENT_FIELDS[event], f"'{event.value}' event")
    error = body.get("error")
    if isinstance(error, dict) and not isinstance(error.get("message", ""), str | None):
        raise InvalidIntent("field 'error.message' must be a string or null")
    return event, body


def authenticate(request: Request) -> str:
    """The owner the request's bearer token maps to, or 401 (the token is never logged).

    A plain call rather than a FastAPI dependency: dependency resolution cost more than the
    rest of a replayed create. The OpenAPI security scheme is declared by hand (``s.SECURED``).
    """
    tokens: TokenTable = request.app.state.tokens
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    owner = tokens.owner_for(token) if scheme.lower() == "bearer" else None
    if owner is None:
        reason = "no bearer token" if not token else "an unknown token"
        log.info("401 for %s %s: %s", request.method, request.url.path, reason)
        raise Unauthenticated("send Authorization: Bearer <token> with a configured token")
    return owner


def store_threads(store: Store) -> int:
    """How many threads may be inside the store at once, per process.

    SQLite has one writer at a time: threads that queue on its lock sleep in its busy handler
    (1, 2, 5 … 100 ms back-offs), so one thread is both faster and fairer; replicas in other
    processes still race on the database's own lock. PostgreSQL: as many threads as the pool
    has connections, so that no thread holds a worker while waiting for a connection.
    """
    if store.backend == "sqlite":
        return 1
    pool = getattr(store, "pool", None)
    return int(getattr(pool, "max_size", None) or 10)


def create_app(store: Store, tokens: TokenTable, *, owns_store: bool = False) -> FastAPI:
    """API v1 over ``store``; ``owns_store``: close it when the app shuts down."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if owns_store:
            await call(store.close)
        executor.shutdown(wait=False)

    app = FastAPI(
        title="failover-harness reference API",
        version=__version__,
        description="API v1: one user intent, one job. See API.md.",
        lifespan=lifespan,
    )
    _install_error_handlers(app)
    s.install_openapi(app)
    app.state.tokens = tokens

    # A plain executor: a thread hop through it costs about half of anyio.to_thread's.
    executor = ThreadPoolExecutor(store_threads(store), thread_name_prefix="harness-store")

    async def call(fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    def job_reply(job: Any, status: int, replayed: bool) -> JSONResponse:
        headers = {"Location": f"/v1/jobs/{job.id}"}
        if replayed:
            headers["Idempotent-Replayed"] = "true"
        return JSONResponse(job.to_json(), status_code=status, headers=headers)

    @app.post(
        "/v1/jobs", status_code=201, response_model=None, tags=["jobs"], operation_id="createJob",
        summary="Create a job (idempotent by owner + Idempotency-Key + fingerprint)",
        openapi_extra={**s.body(s.ref("JobRequest")), **s.SECURED,
                       "parameters": [s.IDEMPOTENCY_KEY_PARAMETER]},
        responses={
            201: s.with_links(s.ok("A new job", s.ref("Job"), Location="The job's URL"),
                              s.JOB_LINKS),
            200: s.with_links(
                s.ok("The existing job for the same intent (a replay)", s.ref("Job"),
                     Idempotent_Replayed="`true`", Location="The job's URL"),
                s.JOB_LINKS,
            ),
            409: s.problem("`idempotency_key_reused`: this key was used for another intent"),
            **s.AUTH_ERRORS, **s.BODY_ERRORS,
        },
    )
    async def create_job(request: Request) -> JSONResponse:
        owner = authenticate(request)
        key = validate_idempotency_key(request.headers.get("idempotency-key"))
        intent = Intent.from_json(parse_json(await read_body(request)))
        result = await call(store.create_job, owner, key, intent)
        return job_reply(result.job, 201 if result.created else 200, not result.created)

    @app.get(
        "/v1/jobs/{job_id}", response_model=None, tags=["jobs"], summary="Read a job",
        operation_id="getJob", openapi_extra=s.SECURED,
        responses={200: s.ok("The job", s.ref("Job")), **s.NOT_FOUND, **s.AUTH_ERRORS},
    )
    async def get_job(job_id: str, request: Request) -> JSONResponse:
        owner = authenticate(request)
        job = await call(store.get_job, owner, _opaque_id(job_id, "job"))
        return JSONResponse(job.to_json())

    @app.post(
        "/v1/jobs/{job_id}/attempts", status_code=201, response_model=None, tags=["attempts"],
        operation_id="startAttempt",
        summary="Start an attempt (holds an open slot)",
        openapi_extra={**s.body(s.ref("AttemptRequest")), **s.SECURED},
        responses={
            201: s.with_links(s.ok("The attempt, `starting`", s.ref("Attempt")),
                              s.ATTEMPT_LINKS),
            409: s.problem("`attempt_in_flight` (names `blocking_attempt_id`) or "
                           "`job_completed`"),
            **s.NOT_FOUND, **s.AUTH_ERRORS, **s.BODY_ERRORS,
        },
    )
    async def start_attempt(job_id: str, request: Request) -> JSONResponse:
        owner = authenticate(request)
        job_id = _opaque_id(job_id, "job")
        body = _object(parse_json(await read_body(request)), {"provider"}, "attempt")
        provider = body.get("provider")
        if not isinstance(provider, str) or not provider:
            raise InvalidIntent("field 'provider' is required: a non-empty string")
        attempt = await call(store.start_attempt, owner, job_id, provider)
        return JSONResponse(attempt.to_json(), status_code=201)

    @app.get(
        "/v1/jobs/{job_id}/attempts", response_model=None, tags=["attempts"],
        operation_id="listAttempts", openapi_extra=s.SECURED,
        summary="The job's attempts, oldest first",
        responses={200: s.ok("The attempts", s.array_of("Attempt")), **s.NOT_FOUND,
                   **s.AUTH_ERRORS},
    )
    async def list_attempts(job_id: str, request: Request) -> JSONResponse:
        owner = authenticate(request)
        attempts = await call(store.list_attempts, owner, _opaque_id(job_id, "job"))
        return JSONResponse([a.to_json() for a in attempts])

    @app.post(
        "/v1/attempts/{attempt_id}/events", response_model=None, tags=["attempts"],
        operation_id="postEvent",
        summary="Report what happened to an attempt; `succeeded` runs the claim",
        openapi_extra={**s.body(s.EVENT_SCHEMA), **s.SECURED},
        responses={
            200: s.with_links(s.ok("The attempt after the event", s.EVENT_REPLY_SCHEMA),
                              s.ATTEMPT_LINKS),
            409: s.problem("`invalid_transition`: the state machine forbids it (names "
                           "`from_state` and `to_state`)"),
            **s.NOT_FOUND, **s.AUTH_ERRORS, **s.BODY_ERRORS,
        },
    )
    async def post_event(attempt_id: str, request: Request) -> JSONResponse:
        owner = authenticate(request)
        attempt_id = _opaque_id(attempt_id, "attempt")
        event, body = parse_event(parse_json(await read_body(request)))
        result = await call(apply_event, store, owner, attempt_id, event, body)
        reply = result.attempt.to_json()
        if result.outcome is not None:
            reply["outcome"] = result.outcome.value
        return JSONResponse(reply)

    @app.get(
        "/v1/jobs/{job_id}/races", response_model=None, tags=["jobs"], operation_id="listRaces",
        openapi_extra=s.SECURED,
        summary="The job's lost claims",
        responses={200: s.ok("The races, oldest first", s.array_of("Race")), **s.NOT_FOUND,
                   **s.AUTH_ERRORS},
    )
    async def list_races(job_id: str, request: Request) -> JSONResponse:
        owner = authenticate(request)
        races = await call(store.list_races, owner, _opaque_id(job_id, "job"))
        return JSONResponse([r.to_json() for r in races])

    @app.get(
        "/healthz", response_model=None, tags=["operations"], summary="Liveness",
        operation_id="healthz",
        responses={200: s.ok("Serving", s.ref("Health"))},
    )
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok", "store": store.backend})

    return app


def app_from_env() -> FastAPI:
    """The app of one worker process, configured by ``failover-harness serve`` via env."""
    tokens = load_tokens(os.environ.get(ENV_TOKENS_FILE), os.environ)
    url = os.environ.get(ENV_DB, DEFAULT_DB)
    options: dict[str, Any] = {}
    if url.startswith(("postgresql://", "postgres://")) and os.environ.get(ENV_POOL_SIZE):
        options["pool_size"] = int(os.environ[ENV_POOL_SIZE])
    return create_app(open_store(url, **options), tokens, owns_store=True)
