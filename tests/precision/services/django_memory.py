"""Precision service (c): API.md as a Django project (settings in this module, no database)
served by Django's own threaded WSGI server (``ThreadedWSGIServer`` + ``WSGIRequestHandler``,
HTTP/1.1 keep-alive), one thread per connection.

- Storage: in memory, every operation under one ``threading.Lock``; ``--listeners 2`` serves
  the same store on two sockets (two front ends, one store: replicas).
- Numbering: versions start at **7** and rise by one on *every* change of the job (its first
  attempt starting makes it ``running``, then the claim); an attempt reads the version after that
  change. Ids: ``job-<n>`` and ``job-<n>.<m>`` (attempt *m* of job *n*).
- Race digest: SHA-256 of the RFC 8785 JSON of ``{"attempt": <id>, "result": <result>}``.
- A failing handler really raises: Django turns it into its HTML ``500``.
- Times: RFC 3339 to the second, ``Z``. Django's ``GZipMiddleware`` compresses every answer of
  200 bytes or more that the client accepts gzip for.
- Test hooks (outside API.md, no auth): ``POST /_test/fail-next``, ``GET /_test/stats``.

Run: ``python -m tests.precision.services.django_memory [--listeners 2]``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import django
from django.conf import settings

from tests.precision.services import common
from tests.precision.services.canon import canonical, fingerprint
from tests.precision.services.common import Invalid

FIRST_VERSION = 7


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Attempt:
    id: str
    job_id: str
    provider: str
    read_version: int
    created_at: str
    state: str = "starting"
    updated_at: str = ""
    error: dict | None = None
    reason: str | None = None
    outcome: str | None = None
    result_key: str | None = None

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "job": self.job_id, "provider": self.provider,
                "state": self.state, "read_version": self.read_version, "error": self.error,
                "cancel_reason": self.reason, "created_at": self.created_at,
                "updated_at": self.updated_at or self.created_at}


@dataclass
class Job:
    id: str
    owner: str
    key: str
    fingerprint: str
    intent: dict[str, Any]
    created_at: str
    status: str = "pending"
    version: int = FIRST_VERSION
    completed_by: str | None = None
    result: dict | None = None
    updated_at: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    races: list[dict[str, Any]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "idempotency_key": self.key, "fingerprint": self.fingerprint,
                **self.intent, "status": self.status, "version": self.version,
                "completed_by": self.completed_by, "result": self.result,
                "created_at": self.created_at, "updated_at": self.updated_at or self.created_at}

    def touch(self, stamp: str) -> None:
        self.version += 1
        self.updated_at = stamp


class Memory:
    """Every job, attempt and race; one lock makes each operation atomic."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[str, Job] = {}
        self.by_key: dict[tuple[str, str], Job] = {}
        self.attempts: dict[str, Attempt] = {}
        self.numbers = itertools.count(1)
        self.fail_next = False

    def create(self, owner: str, key: str, intent: dict[str, Any]) -> tuple[bool, Job]:
        digest = fingerprint(intent)
        with self.lock:
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("injected handler failure")
            job = self.by_key.get((owner, key))
            created = job is None
            if job is None:
                job = Job(f"job-{next(self.numbers)}", owner, key, digest, intent, now())
                self.jobs[job.id] = job
                self.by_key[(owner, key)] = job
        if job.fingerprint != digest:
            raise Invalid(409, "idempotency_key_reused", "key already used for another request")
        return created, job

    def job(self, owner: str, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None or job.owner != owner:
            raise Invalid(404, "not_found", "not found")
        return job

    def start(self, owner: str, job_id: str, provider: str) -> Attempt:
        with self.lock:
            job = self.job(owner, job_id)
            if job.status in ("succeeded", "cancelled"):
                raise Invalid(409, "job_completed", "job is complete")
            open_ = [a for a in job.attempts if a.state in common.STATES_OPEN]
            if len(open_) >= job.intent["policy"]["max_open_attempts"]:
                raise Invalid(409, "attempt_in_flight", "an attempt is in flight",
                              blocking_attempt_id=open_[0].id)
            stamp = now()
            if job.status == "pending":
                job.status = "running"
                job.touch(stamp)
            attempt = Attempt(f"{job.id}.{len(job.attempts) + 1}", job.id, provider,
                              job.version, stamp)
            job.attempts.append(attempt)
            self.attempts[attempt.id] = attempt
            return attempt

    def event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> dict[str, Any]:
        kind = event["type"]
        with self.lock:
            attempt = self.attempts.get(attempt_id)
            if attempt is None or self.jobs[attempt.job_id].owner != owner:
                raise Invalid(404, "not_found", "not found")
            job = self.jobs[attempt.job_id]
            stamp = now()
            if kind == "succeeded":
                same = fingerprint(event["result"])
                if attempt.outcome and attempt.result_key == same:
                    return {**attempt.public(), "outcome": attempt.outcome}
                if attempt.state == "cancelled" and not attempt.outcome:
                    self._race(job, attempt, event["result"], "attempt cancelled", stamp)
                    attempt.outcome, attempt.result_key = "lost", same
                    return {**attempt.public(), "outcome": "lost"}
            sources, target = common.TRANSITIONS[kind]
            if attempt.state not in sources:
                raise Invalid(409, "invalid_transition",
                              f"cannot go from {attempt.state} to {target}",
                              **{"from": attempt.state, "to": target})
            attempt.state, attempt.updated_at = target, stamp
            if kind == "failed":
                attempt.error = event["error"]
            if kind == "cancelled":
                attempt.reason = event.get("reason")
            if kind != "succeeded":
                return attempt.public()
            attempt.result_key = fingerprint(event["result"])
            if job.completed_by is None and job.version == attempt.read_version:
                job.result, job.completed_by, job.status = event["result"], attempt.id, \
                    "succeeded"
                job.touch(stamp)
                attempt.outcome = "won"
            else:
                self._race(job, attempt, event["result"], "claim lost", stamp)
                attempt.outcome = "lost"
            return {**attempt.public(), "outcome": attempt.outcome}

    @staticmethod
    def _race(job: Job, attempt: Attempt, result: dict, reason: str, stamp: str) -> None:
        digest = hashlib.sha256(canonical({"attempt": attempt.id, "result": result}).encode())
        job.races.append({"attempt_id": attempt.id, "at": stamp,
                          "payload_sha256": digest.hexdigest(),
                          "winner_attempt_id": job.completed_by, "reason": reason})


MEMORY = Memory()
TOKENS: dict[str, str] = {}


def _answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Any:
    from django.http import HttpResponse

    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _problem(err: Invalid) -> Any:
    response = _answer(err.status, {"type": f"tag:precision.test,2026:{err.code}",
                                    "title": err.detail, "status": err.status,
                                    "detail": err.detail, "code": err.code, **err.extra})
    response["Content-Type"] = "application/problem+json"
    return response


def api(view: Any) -> Any:
    """Authenticate, parse JSON, turn ``Invalid`` into problem details (others raise: 500)."""

    def wrapped(request: Any, **kwargs: Any) -> Any:
        try:
            owner = common.owner_of(request.headers.get("Authorization"), TOKENS)
            body: Any = None
            if request.method == "POST":
                try:
                    body = json.loads(request.body or b"null")
                except ValueError:
                    raise Invalid(422, "invalid_request", "body is not JSON",
                                  field="body") from None
            return view(request, owner, body, **kwargs)
        except Invalid as err:
            return _problem(err)

    return wrapped


@api
def jobs_view(request: Any, owner: str, body: Any) -> Any:
    if request.method != "POST":
        return _problem(Invalid(405, "method_not_allowed", "POST only"))
    key = common.check_key(request.headers.get("Idempotency-Key"))
    created, job = MEMORY.create(owner, key, common.parse_intent(body))
    return _answer(201, job.public()) if created else _answer(
        200, job.public(), {"Idempotent-Replayed": "true"})


@api
def job_view(request: Any, owner: str, body: Any, job_id: str) -> Any:
    with MEMORY.lock:
        return _answer(200, MEMORY.job(owner, job_id).public())


@api
def attempts_view(request: Any, owner: str, body: Any, job_id: str) -> Any:
    if request.method == "POST":
        provider = body.get("provider") if isinstance(body, dict) else None
        if not isinstance(provider, str) or not provider:
            raise Invalid(422, "invalid_request", "provider must be a string", field="provider")
        return _answer(201, MEMORY.start(owner, job_id, provider).public())
    with MEMORY.lock:
        return _answer(200, [a.public() for a in MEMORY.job(owner, job_id).attempts])


@api
def races_view(request: Any, owner: str, body: Any, job_id: str) -> Any:
    with MEMORY.lock:
        return _answer(200, list(MEMORY.job(owner, job_id).races))


@api
def events_view(request: Any, owner: str, body: Any, attempt_id: str) -> Any:
    return _answer(200, MEMORY.event(owner, attempt_id, common.parse_event(body)))


def healthz(request: Any) -> Any:
    return _answer(200, {"status": "ok", "store": "memory"})


def openapi(request: Any) -> Any:
    return _answer(200, {"openapi": "3.1.0", "info": {"title": "precision-c", "version": "1"},
                         "paths": {}})


def fail_next(request: Any) -> Any:
    with MEMORY.lock:
        MEMORY.fail_next = True
    return _answer(200, {"armed": True})


def stats(request: Any) -> Any:
    with MEMORY.lock:
        return _answer(200, {"jobs": len(MEMORY.jobs)})


def urls() -> list[Any]:
    from django.urls import path

    return [
        path("healthz", healthz), path("openapi.json", openapi),
        path("_test/fail-next", fail_next), path("_test/stats", stats),
        path("v1/jobs", jobs_view), path("v1/jobs/<str:job_id>", job_view),
        path("v1/jobs/<str:job_id>/attempts", attempts_view),
        path("v1/jobs/<str:job_id>/races", races_view),
        path("v1/attempts/<str:attempt_id>/events", events_view),
    ]


urlpatterns: list[Any] = []


def main() -> None:
    parser = common.service_args(__doc__.splitlines()[0])
    parser.add_argument("--listeners", type=int, default=1)
    args = parser.parse_args()
    TOKENS.update(common.load_tokens(args.tokens_file))
    settings.configure(
        DEBUG=False, ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__,
        SECRET_KEY="precision-suite-not-secret", INSTALLED_APPS=[],
        MIDDLEWARE=["django.middleware.gzip.GZipMiddleware"],
        DATABASES={}, USE_TZ=True, APPEND_SLASH=False,
        LOGGING={"version": 1, "disable_existing_loggers": True,
                 "loggers": {"django": {"handlers": [], "level": "CRITICAL",
                                        "propagate": False}}})
    django.setup()
    urlpatterns.extend(urls())
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    handler = WSGIHandler()
    servers = []
    for _ in range(args.listeners):
        server = ThreadedWSGIServer((args.host, args.port), WSGIRequestHandler)
        server.set_app(handler)
        servers.append(server)
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    common.announce(",".join(f"http://{args.host}:{s.server_address[1]}" for s in servers))
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
