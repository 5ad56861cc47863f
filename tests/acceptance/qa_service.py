"""An independent API v1 service, written from ../shared/API.md alone, to try the harness on.

Deliberately unlike the reference service and the precision suite's services:

- a raw ``asyncio`` HTTP/1.1 server (no framework, no WSGI/ASGI): keep-alive connections are
  closed after ``--idle-ms`` (default 50 ms) without a request, the way many proxies do;
- ids are URL-safe base64 of 12 random bytes (``-`` and ``_`` included);
- versions start at 100 and rise by 7 on every change of a job;
- one process, one event loop, memory only; ``--replicas N`` listens on N ports over one store;
- a duplicate create waits on a per-(owner, key) lock while the first one works (``--work-ms``),
  then gets the first's job (200, ``Idempotent-Replayed: true``);
- a claim wins when the job has no winner yet (no read-version compare).

Test hooks outside API v1: ``GET /_stats`` → ``{"jobs": <handler runs that made a job>}`` and
``POST /_faults/fail-next`` (the next create's handler fails with a 500 and keeps nothing);
``--drop-event TYPE`` closes the connection of the first such attempt event unanswered;
``--flaws a,b`` injects deliberate bugs (``FLAWS``), each of which the harness must catch.

    python tests/acceptance/qa_service.py --port 0 --tokens-file t.yaml [--replicas 2]

prints ``listening on http://127.0.0.1:PORT[,http://127.0.0.1:PORT2]`` once it accepts.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import hashlib
import json
import os
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

import rfc8785
import yaml

OPEN = ("starting", "running", "unknown")
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "dispatched": ("starting",),
    "timed_out": ("starting", "running"),
    "failed": ("starting", "running", "unknown"),
    "succeeded": ("starting", "running", "unknown"),
    "cancelled": ("starting", "running", "unknown"),
}
TARGET_STATE = {"dispatched": "running", "timed_out": "unknown", "failed": "failed",
                "succeeded": "succeeded", "cancelled": "cancelled"}
FIRST_REQUEST_S = 10.0
REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           413: "Content Too Large", 422: "Unprocessable Content", 500: "Internal Server Error"}


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(12)).decode("ascii")


class Problem(Exception):
    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.extra = status, code, detail, extra

    def body(self) -> dict[str, Any]:
        return {"type": f"https://qa.invalid/problems/{self.code}", "title": self.code,
                "status": self.status, "detail": self.detail, "code": self.code, **self.extra}


@dataclass
class Job:
    owner: str
    key: str
    fingerprint: str
    contract: str
    input: dict[str, Any]
    params: dict[str, Any]
    policy: dict[str, Any]
    id: str = field(default_factory=new_id)
    status: str = "pending"
    version: int = 100
    completed_by: str | None = None
    result: Any = None
    created_at: str = field(default_factory=now)
    updated_at: str = ""
    attempts: list[str] = field(default_factory=list)
    races: list[dict[str, Any]] = field(default_factory=list)

    def touch(self) -> None:
        self.version += 7
        self.updated_at = now()

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "idempotency_key": self.key, "fingerprint": self.fingerprint,
                "contract": self.contract, "input": self.input, "params": self.params,
                "policy": self.policy, "status": self.status, "version": self.version,
                "completed_by": self.completed_by, "result": self.result,
                "created_at": self.created_at, "updated_at": self.updated_at or self.created_at}


@dataclass
class Attempt:
    job_id: str
    provider: str
    read_version: int
    id: str = field(default_factory=new_id)
    state: str = "starting"
    result: Any = None
    outcome: str | None = None
    error: dict[str, Any] | None = None
    reason: str | None = None
    created_at: str = field(default_factory=now)
    updated_at: str = ""

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "job_id": self.job_id, "provider": self.provider,
                "state": self.state, "read_version": self.read_version, "error": self.error,
                "reason": self.reason, "created_at": self.created_at,
                "updated_at": self.updated_at or self.created_at}


#: the no-lock flaw's longest wait for a duplicate create of the same key (bounds a hang only)
HOLD_S = 5.0
FLAWS = ("no-lock", "no-fingerprint", "owner-leak", "timeout-frees-slot", "cancelled-can-win",
         "last-write-wins", "no-replay-header")


class Store:
    def __init__(self, work_s: float, flaws: frozenset[str] = frozenset()) -> None:
        self.work_s = work_s
        self.flaws = flaws
        self.jobs: dict[str, Job] = {}
        self.by_key: dict[tuple[str, str], str] = {}
        self.attempts: dict[str, Attempt] = {}
        self.key_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.duplicates: dict[tuple[str, str], asyncio.Event] = {}  # the no-lock flaw's hold
        self.checked: dict[tuple[str, str], int] = {}
        self.side_effects = 0
        self.fail_next = False

    # --- jobs ---------------------------------------------------------------------------
    async def create(self, owner: str, key: str, body: Any) -> tuple[int, Job]:
        contract, inp, params, policy = validate_job_body(body)
        fingerprint = hashlib.sha256(rfc8785.dumps(
            {"contract": contract, "input": inp, "params": params, "policy": policy})).hexdigest()
        lock = self.key_locks.setdefault((owner, key), asyncio.Lock())
        if "no-lock" in self.flaws:
            lock = asyncio.Lock()  # flaw: a lock of its own, so duplicates overlap
        async with lock:
            existing = self.by_key.get((owner, key))
            if existing is not None:
                job = self.jobs[existing]
                if job.fingerprint != fingerprint and "no-fingerprint" not in self.flaws:
                    raise Problem(409, "idempotency_key_reused",
                                  f"idempotency key {key!r} was used with another request body")
                return 200, job
            if "no-lock" in self.flaws:
                await self._overlap(owner, key)
            if self.work_s:
                await asyncio.sleep(self.work_s)  # the handler's work, under the key's lock
            if self.fail_next:
                self.fail_next = False
                raise Problem(500, "handler_failed", "the handler failed (a test fault)")
            job = Job(owner, key, fingerprint, contract, inp, params, policy)
            self.jobs[job.id] = job
            self.by_key[(owner, key)] = job.id
            self.side_effects += 1
            return 201, job

    async def _overlap(self, owner: str, key: str) -> None:
        """The no-lock flaw, made to show every time rather than when the machine's timing
        allows: the first create of a key to find no job waits here until a duplicate has also
        found none (HOLD_S only bounds a duplicate that never comes); the rest go on."""
        duplicate = self.duplicates.setdefault((owner, key), asyncio.Event())
        self.checked[(owner, key)] = self.checked.get((owner, key), 0) + 1
        if self.checked[(owner, key)] > 1:
            duplicate.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(duplicate.wait(), HOLD_S)

    def job(self, owner: str, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None or (job.owner != owner and "owner-leak" not in self.flaws):
            raise Problem(404, "not_found", "no such job")
        return job

    # --- attempts -----------------------------------------------------------------------
    def start(self, owner: str, job_id: str, body: dict[str, Any]) -> Attempt:
        job = self.job(owner, job_id)
        provider = body.get("provider")
        if set(body) - {"provider"}:
            raise Problem(422, "invalid_request", "unknown field", field=sorted(set(body))[0])
        if not isinstance(provider, str) or not provider:
            raise Problem(422, "invalid_request", "provider must be a non-empty string",
                          field="provider")
        if job.status in ("succeeded", "cancelled"):
            raise Problem(409, "job_completed", f"the job is {job.status}")
        blocking = ("starting", "running") if "timeout-frees-slot" in self.flaws else OPEN
        open_ = [a for a in (self.attempts[i] for i in job.attempts) if a.state in blocking]
        if len(open_) >= job.policy["max_open_attempts"]:
            raise Problem(409, "attempt_in_flight", "the job has as many open attempts as its "
                          "policy allows", blocking_attempt_id=open_[0].id)
        if job.status != "running":
            job.status = "running"
            job.touch()
        attempt = Attempt(job.id, provider, job.version)
        self.attempts[attempt.id] = attempt
        job.attempts.append(attempt.id)
        return attempt

    def attempt(self, owner: str, attempt_id: str) -> tuple[Attempt, Job]:
        attempt = self.attempts.get(attempt_id)
        if attempt is None or self.jobs[attempt.job_id].owner != owner:
            raise Problem(404, "not_found", "no such attempt")
        return attempt, self.jobs[attempt.job_id]

    def event(self, owner: str, attempt_id: str, body: dict[str, Any]) -> dict[str, Any]:
        attempt, job = self.attempt(owner, attempt_id)
        kind = body.get("type")
        if kind not in TRANSITIONS:
            raise Problem(422, "invalid_request", f"type must be one of {sorted(TRANSITIONS)}",
                          field="type")
        if kind == "succeeded":
            result = body.get("result")
            if not isinstance(result, dict):
                raise Problem(422, "invalid_request", "result must be an object", field="result")
            if attempt.outcome is not None:  # a repeated claim
                if rfc8785.dumps(result) == rfc8785.dumps(attempt.result):
                    return {**attempt.view(), "outcome": attempt.outcome}
                raise Problem(409, "invalid_transition", f"cannot go from {attempt.state} to "
                              "succeeded with another result", state=attempt.state,
                              to="succeeded")
            if attempt.state == "cancelled" and "cancelled-can-win" not in self.flaws:
                # a late result of a cancelled attempt loses
                return self._lose(attempt, job, result, "the attempt was cancelled")
        if kind == "failed":
            error = body.get("error")
            if not (isinstance(error, dict) and isinstance(error.get("code"), str)):
                raise Problem(422, "invalid_request", "error must be {code, message}",
                              field="error")
        allowed = TRANSITIONS[kind] + (("cancelled",) if kind == "succeeded"
                                       and "cancelled-can-win" in self.flaws else ())
        if attempt.state not in allowed:
            raise Problem(409, "invalid_transition",
                          f"cannot go from {attempt.state} to {TARGET_STATE[kind]}",
                          state=attempt.state, to=TARGET_STATE[kind])
        attempt.state = TARGET_STATE[kind]
        attempt.updated_at = now()
        if kind == "failed":
            attempt.error = body["error"]
            self._maybe_failed(job)
        elif kind == "cancelled":
            attempt.reason = body.get("reason") if isinstance(body.get("reason"), str) else None
        elif kind == "succeeded":
            if job.completed_by is not None and "last-write-wins" not in self.flaws:
                return self._lose(attempt, job, body["result"], "the job already has a winner")
            attempt.result, attempt.outcome = body["result"], "won"
            job.status, job.completed_by, job.result = "succeeded", attempt.id, body["result"]
            job.touch()
            return {**attempt.view(), "outcome": "won"}
        return attempt.view()

    def _lose(self, attempt: Attempt, job: Job, result: dict[str, Any],
              reason: str) -> dict[str, Any]:
        attempt.result, attempt.outcome = result, "lost"
        job.races.append({"attempt_id": attempt.id, "at": now(),
                          "payload_sha256": hashlib.sha256(rfc8785.dumps(result)).hexdigest(),
                          "winner_attempt_id": job.completed_by, "reason": reason})
        return {**attempt.view(), "outcome": "lost"}

    def _maybe_failed(self, job: Job) -> None:
        if job.completed_by is None and not any(
                self.attempts[i].state in OPEN for i in job.attempts):
            job.status = "failed"
            job.touch()


def validate_job_body(body: Any) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    if not isinstance(body, dict):
        raise Problem(422, "invalid_request", "the body must be a JSON object", field="body")
    extra = set(body) - {"contract", "input", "params", "policy"}
    if extra:
        raise Problem(422, "invalid_request", f"unknown field {sorted(extra)[0]!r}",
                      field=sorted(extra)[0])
    contract, inp = body.get("contract"), body.get("input")
    params = body.get("params", {})
    policy = body.get("policy", {})
    if not isinstance(contract, str) or not contract:
        raise Problem(422, "invalid_request", "contract must be a non-empty string",
                      field="contract")
    if not isinstance(inp, dict):
        raise Problem(422, "invalid_request", "input must be an object", field="input")
    if not isinstance(params, dict):
        raise Problem(422, "invalid_request", "params must be an object", field="params")
    if not isinstance(policy, dict) or set(policy) - {"max_open_attempts"}:
        raise Problem(422, "invalid_request", "policy may hold max_open_attempts only",
                      field="policy")
    n = policy.get("max_open_attempts", 1)
    if isinstance(n, bool) or n not in (1, 2):
        raise Problem(422, "invalid_request", "max_open_attempts must be 1 or 2",
                      field="policy.max_open_attempts")
    return contract, inp, params, {"max_open_attempts": int(n)}


def valid_key(key: str) -> bool:
    return 1 <= len(key) <= 255 and all(0x21 <= ord(c) <= 0x7E for c in key)


class App:
    def __init__(self, store: Store, tokens: dict[str, str], idle_s: float,
                 drop_event: str | None = None) -> None:
        self.store, self.tokens, self.idle_s = store, tokens, idle_s
        self.drop_event = drop_event

    async def handle(self, method: str, path: str, headers: dict[str, str],
                     body: bytes) -> tuple[int, dict[str, str], Any]:
        parts = [p for p in path.split("?", 1)[0].split("/") if p]
        if parts == ["healthz"] and method == "GET":
            return 200, {}, {"status": "ok", "store": "memory"}
        if parts == ["openapi.json"] and method == "GET":
            return 200, {}, {"openapi": "3.1.0", "info": {"title": "qa service", "version": "1"},
                             "paths": {}}
        if parts == ["_stats"] and method == "GET":
            return 200, {}, {"jobs": self.store.side_effects}
        if parts == ["_faults", "fail-next"] and method == "POST":
            self.store.fail_next = True
            return 200, {}, {"armed": True}
        token = headers.get("authorization", "")
        owner = self.tokens.get(token[7:]) if token.startswith("Bearer ") else None
        if owner is None:
            raise Problem(401, "unauthenticated", "a valid bearer token is required")
        payload = self._json(body) if method == "POST" else None
        s = self.store
        match (method, parts):
            case ("POST", ["v1", "jobs"]):
                key = headers.get("idempotency-key")
                if key is None:
                    raise Problem(400, "idempotency_key_missing", "Idempotency-Key is required")
                if not valid_key(key):
                    raise Problem(400, "idempotency_key_invalid",
                                  "Idempotency-Key must be 1-255 printable ASCII, no spaces")
                status, job = await s.create(owner, key, payload)
                extra = {"Idempotent-Replayed": "true"} if status == 200 and \
                    "no-replay-header" not in s.flaws else {}
                return status, extra, job.view()
            case ("GET", ["v1", "jobs", job_id]):
                return 200, {}, s.job(owner, job_id).view()
            case ("POST", ["v1", "jobs", job_id, "attempts"]):
                if not isinstance(payload, dict):
                    raise Problem(422, "invalid_request", "the body must be an object",
                                  field="body")
                return 201, {}, s.start(owner, job_id, payload).view()
            case ("GET", ["v1", "jobs", job_id, "attempts"]):
                job = s.job(owner, job_id)
                return 200, {}, [s.attempts[i].view() for i in job.attempts]
            case ("GET", ["v1", "jobs", job_id, "races"]):
                return 200, {}, list(s.job(owner, job_id).races)
            case ("POST", ["v1", "attempts", attempt_id, "events"]):
                if not isinstance(payload, dict):
                    raise Problem(422, "invalid_request", "the body must be an object",
                                  field="body")
                return 200, {}, s.event(owner, attempt_id, payload)
        raise Problem(404, "not_found", f"no route for {method} {path}")

    @staticmethod
    def _json(body: bytes) -> Any:
        try:
            return json.loads(body or b"null")
        except ValueError as e:
            raise Problem(422, "invalid_request", f"the body is not JSON: {e}",
                          field="body") from None

    async def connection(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        wait = FIRST_REQUEST_S  # a new connection gets time to send its first request
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), wait)
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return  # idle past the keep-alive timeout, or the client went away
                lines = head.decode("latin-1").split("\r\n")
                method, target, version = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                if self.drop_event and target.endswith("/events") and \
                        json.loads(body or b"{}").get("type") == self.drop_event:
                    self.drop_event = None  # once: closed unread, as an idle timeout would
                    return
                try:
                    status, extra, payload = await self.handle(method, target, headers, body)
                    ctype = "application/json"
                except Problem as p:
                    status, extra, payload = p.status, {}, p.body()
                    ctype = "application/problem+json"
                data = json.dumps(payload, separators=(",", ":")).encode()
                close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
                out = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
                       f"Content-Type: {ctype}", f"Content-Length: {len(data)}",
                       f"Connection: {'close' if close else 'keep-alive'}"]
                out += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + data)
                await writer.drain()
                if close:
                    return
                wait = self.idle_s  # then: idle between requests
        finally:
            writer.close()


def load_tokens(path: str | None) -> dict[str, str]:
    if path:
        with open(path, encoding="utf-8") as f:
            return {str(k): str(v) for k, v in (yaml.safe_load(f) or {}).items()}
    pairs = [p for p in os.environ.get("HARNESS_TOKENS", "").split(",") if "=" in p]
    return dict(p.split("=", 1) for p in pairs)


async def serve(args: argparse.Namespace) -> None:
    flaws = frozenset(f for f in args.flaws.split(",") if f)
    unknown = flaws - set(FLAWS)
    if unknown:
        sys.exit(f"unknown flaw(s) {sorted(unknown)}; use: {', '.join(FLAWS)}")
    app = App(Store(args.work_ms / 1000, flaws), load_tokens(args.tokens_file),
              args.idle_ms / 1000, args.drop_event)
    servers, urls = [], []
    for i in range(args.replicas):
        port = args.port + i if args.port else 0
        server = await asyncio.start_server(app.connection, "127.0.0.1", port,
                                            family=socket.AF_INET)
        servers.append(server)
        urls.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    print("listening on " + ",".join(urls), flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--tokens-file")
    parser.add_argument("--idle-ms", type=float, default=50.0)
    parser.add_argument("--work-ms", type=float, default=5.0)
    parser.add_argument("--flaws", default="", help="deliberate bugs, comma-separated: "
                        + ", ".join(FLAWS))
    parser.add_argument("--drop-event", metavar="TYPE",
                        help="close the connection of the first event of this type, unanswered "
                        "and unprocessed (what an idle timeout racing the request does)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
