"""The reference HTTP service: API v1 (../shared/API.md) as an ASGI application over a Store.

``create_app(store, tokens)`` builds the app around an open store; ``app_from_env()`` is the
factory uvicorn imports in each worker process (``--workers N``), configured by the
environment that ``failover-harness serve`` sets.

The request path is short on purpose (``bench/service.py`` measures each part): uvicorn hands
the request to the route table (:mod:`harness.service.asgi`); the body is parsed as strict JSON
and validated by the pydantic model that also describes it in the OpenAPI document
(:mod:`harness.service.schemas`); the store call hops to the app's own store threads
(:mod:`harness.service.hop`; how many: :func:`store_threads`; the SQLite store keeps one
connection per thread); the reply is written as one JSON document. The event loop never runs
SQL.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

from harness import __version__
from harness.domain import EventType, Intent, NotFound, Policy
from harness.domain.entities import Job
from harness.domain.fingerprint import validate_idempotency_key
from harness.service import schemas as s
from harness.service.asgi import Receive, Reply, Request, Route, Router, Scope, Send, handle_http
from harness.service.auth import TokenTable, Unauthenticated, load_tokens
from harness.service.hop import StoreThreads
from harness.service.lifeline import tie_to_parent
from harness.service.payload import parse_json
from harness.store import Store, apply_event, open_store

log = logging.getLogger("harness.service")

ENV_DB = "HARNESS_SERVE_DB"
ENV_TOKENS_FILE = "HARNESS_TOKENS_FILE"
ENV_POOL_SIZE = "HARNESS_SERVE_POOL_SIZE"
DEFAULT_DB = "sqlite:///harness.db"
TITLE = "failover-harness reference API"
DESCRIPTION = "API v1: one user intent, one job. See API.md."

_ID_RE = re.compile(r"[\x21-\x7e]{1,255}")
T = TypeVar("T")


def _opaque_id(value: str, what: str) -> str:
    """A path id; one no store could hold (NUL, non-ASCII, too long) is simply not found."""
    if not _ID_RE.fullmatch(value):
        raise NotFound(f"{what} not found")
    return value


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


def _job_reply(job: Job, status: int, replayed: bool) -> Reply:
    headers = [("location", f"/v1/jobs/{job.id}")]
    if replayed:
        headers.append(("idempotent-replayed", "true"))
    return Reply(job.to_json(), status, tuple(headers))


class ServiceApp:
    """API v1 over ``store``, as an ASGI application (``owns_store``: close it on shutdown)."""

    def __init__(self, store: Store, tokens: TokenTable, *, owns_store: bool = False) -> None:
        self.store, self.tokens, self.owns_store = store, tokens, owns_store
        self.threads = StoreThreads(store_threads(store))
        self.router = Router(self._routes())
        self._openapi: dict[str, Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await handle_http(self.router, scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.owns_store:
                    await self.call(self.store.close)
                self.threads.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store call on one of the app's store threads."""
        return await self.threads.call(fn, *args)

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document (built once)."""
        if self._openapi is None:
            self._openapi = s.openapi_document(self.router.routes, title=TITLE,
                                               version=__version__, description=DESCRIPTION)
        return self._openapi

    def authenticate(self, request: Request) -> str:
        """The owner the request's bearer token maps to, or 401 (the token is never logged)."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        owner = self.tokens.owner_for(token) if scheme.lower() == "bearer" else None
        if owner is None:
            reason = "no bearer token" if not token else "an unknown token"
            log.info("401 for %s %s: %s", request.method, request.path, reason)
            raise Unauthenticated("send Authorization: Bearer <token> with a configured token")
        return owner

    # -- the routes ----------------------------------------------------------------------------
    async def create_job(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        key = validate_idempotency_key(request.headers.get("idempotency-key"))
        body: s.JobRequest = s.validate(s.JobRequest, parse_json(await request.body()), "job")
        intent = Intent(
            contract=body.contract, input=body.input,
            params={} if body.params is None else body.params,
            policy=Policy(body.policy.max_open_attempts) if body.policy else Policy(),
        )
        result = await self.call(self.store.create_job, owner, key, intent)
        return _job_reply(result.job, 201 if result.created else 200, not result.created)

    async def get_job(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        job = await self.call(self.store.get_job, owner,
                              _opaque_id(request.params["job_id"], "job"))
        return Reply(job.to_json())

    async def start_attempt(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        job_id = _opaque_id(request.params["job_id"], "job")
        body: s.AttemptRequest = s.validate(s.AttemptRequest, parse_json(await request.body()),
                                            "attempt")
        attempt = await self.call(self.store.start_attempt, owner, job_id, body.provider)
        return Reply(attempt.to_json(), 201)

    async def list_attempts(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        attempts = await self.call(self.store.list_attempts, owner,
                                   _opaque_id(request.params["job_id"], "job"))
        return Reply([a.to_json() for a in attempts])

    async def post_event(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        attempt_id = _opaque_id(request.params["attempt_id"], "attempt")
        body = parse_json(await request.body())
        event = s.validate(s.EVENT_ADAPTER, body, "event")
        result = await self.call(apply_event, self.store, owner, attempt_id,
                                 EventType(event.type), body)
        reply = result.attempt.to_json()
        if result.outcome is not None:
            reply["outcome"] = result.outcome.value
        return Reply(reply)

    async def list_races(self, request: Request) -> Reply:
        owner = self.authenticate(request)
        races = await self.call(self.store.list_races, owner,
                                _opaque_id(request.params["job_id"], "job"))
        return Reply([r.to_json() for r in races])

    async def healthz(self, request: Request) -> Reply:
        return Reply({"status": "ok", "store": self.store.backend})

    async def openapi_json(self, request: Request) -> Reply:
        return Reply(self.openapi())

    def _routes(self) -> list[Route]:
        return [
            Route("POST", "/v1/jobs", self.create_job, {
                "tags": ["jobs"], "operationId": "createJob",
                "summary": "Create a job (idempotent by owner + Idempotency-Key + fingerprint)",
                **s.body(s.ref("JobRequest")), **s.SECURED,
                "parameters": [s.IDEMPOTENCY_KEY_PARAMETER],
                "responses": s.responses({
                    201: s.with_links(s.ok("A new job", s.ref("Job"), Location="The job's URL"),
                                      s.JOB_LINKS),
                    200: s.with_links(
                        s.ok("The existing job for the same intent (a replay)", s.ref("Job"),
                             Idempotent_Replayed="`true`", Location="The job's URL"),
                        s.JOB_LINKS),
                    409: s.problem("`idempotency_key_reused`: this key was used for another "
                                   "intent"),
                    **s.AUTH_ERRORS, **s.BODY_ERRORS,
                }),
            }),
            Route("GET", "/v1/jobs/{job_id}", self.get_job, {
                "tags": ["jobs"], "operationId": "getJob", "summary": "Read a job", **s.SECURED,
                "responses": s.responses({200: s.ok("The job", s.ref("Job")), **s.NOT_FOUND,
                                          **s.AUTH_ERRORS}),
            }),
            Route("POST", "/v1/jobs/{job_id}/attempts", self.start_attempt, {
                "tags": ["attempts"], "operationId": "startAttempt",
                "summary": "Start an attempt (holds an open slot)",
                **s.body(s.ref("AttemptRequest")), **s.SECURED,
                "responses": s.responses({
                    201: s.with_links(s.ok("The attempt, `starting`", s.ref("Attempt")),
                                      s.ATTEMPT_LINKS),
                    409: s.problem("`attempt_in_flight` (names `blocking_attempt_id`) or "
                                   "`job_completed`"),
                    **s.NOT_FOUND, **s.AUTH_ERRORS, **s.BODY_ERRORS,
                }),
            }),
            Route("GET", "/v1/jobs/{job_id}/attempts", self.list_attempts, {
                "tags": ["attempts"], "operationId": "listAttempts",
                "summary": "The job's attempts, oldest first", **s.SECURED,
                "responses": s.responses({200: s.ok("The attempts", s.array_of("Attempt")),
                                          **s.NOT_FOUND, **s.AUTH_ERRORS}),
            }),
            Route("POST", "/v1/attempts/{attempt_id}/events", self.post_event, {
                "tags": ["attempts"], "operationId": "postEvent",
                "summary": "Report what happened to an attempt; `succeeded` runs the claim",
                **s.body(s.EVENT_SCHEMA), **s.SECURED,
                "responses": s.responses({
                    200: s.with_links(s.ok("The attempt after the event", s.EVENT_REPLY_SCHEMA),
                                      s.ATTEMPT_LINKS),
                    409: s.problem("`invalid_transition`: the state machine forbids it (names "
                                   "`from_state` and `to_state`)"),
                    **s.NOT_FOUND, **s.AUTH_ERRORS, **s.BODY_ERRORS,
                }),
            }),
            Route("GET", "/v1/jobs/{job_id}/races", self.list_races, {
                "tags": ["jobs"], "operationId": "listRaces", "summary": "The job's lost claims",
                **s.SECURED,
                "responses": s.responses({200: s.ok("The races, oldest first",
                                                    s.array_of("Race")),
                                          **s.NOT_FOUND, **s.AUTH_ERRORS}),
            }),
            Route("GET", "/healthz", self.healthz, {
                "tags": ["operations"], "operationId": "healthz", "summary": "Liveness",
                "responses": s.responses({200: s.ok("Serving", s.ref("Health"))}),
            }),
            Route("GET", "/openapi.json", self.openapi_json),
        ]


def create_app(store: Store, tokens: TokenTable, *, owns_store: bool = False) -> ServiceApp:
    """API v1 over ``store``; ``owns_store``: close it when the app shuts down."""
    return ServiceApp(store, tokens, owns_store=owns_store)


def app_from_env() -> ServiceApp:
    """The app of one worker process, configured by ``failover-harness serve`` via env."""
    tie_to_parent()  # an orphaned worker must not keep serving the port
    tokens = load_tokens(os.environ.get(ENV_TOKENS_FILE), os.environ)
    url = os.environ.get(ENV_DB, DEFAULT_DB)
    options: dict[str, Any] = {}
    if url.startswith(("postgresql://", "postgres://")) and os.environ.get(ENV_POOL_SIZE):
        options["pool_size"] = int(os.environ[ENV_POOL_SIZE])
    return create_app(open_store(url, **options), tokens, owns_store=True)
