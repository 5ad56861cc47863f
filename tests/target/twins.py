"""A small LLM job service written for these tests, with a body and an owner header of its own,
and its defective twins: ``POST /jobs`` takes ``{"text": …}`` (anything else: 422), the key in
``Idempotency-Key`` (400 without), the owner in ``X-Owner`` (401 without); 201 for a new job,
200 + ``Idempotent-Replayed: true`` for the same owner, key and body, 409 for another body.
``GET /jobs/{id}`` answers the owner's job (another owner's: 404). No side-effect counter.

With ``provider``, a worker sends each job's text to an OpenAI chat-completions provider at that
base URL once, and the job succeeds or fails on its answer; with ``hedge`` too, it then also asks
that second provider (a hedge within the same job: one handler run, two calls).

The flaws: ``check-then-insert`` (looks the key up, then inserts without a lock: concurrent
duplicates become jobs of their own), ``ignores-owner`` (keys and reads are global),
``replays-other-body`` (another body under a used key gets the first job), ``refuses-all``
(422 to every create).
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

FLAWS = ("check-then-insert", "ignores-owner", "replays-other-body", "refuses-all")
RACE_WINDOW_S = 0.3  # check-then-insert: how long a miss waits for a concurrent duplicate

PROFILE = """\
name: jobs-twin
capabilities: [jobs]
fingerprint: bytes
operations:
  create_job:
    method: POST
    path: /jobs
    key_header: Idempotency-Key
    body: {text: "{prompt}"}
    fields: {id: id, status: status}
    values: {status: {queued: pending}}
  get_job:
    method: GET
    path: "/jobs/{job_id}"
    fields: {id: id, status: status}
    values: {status: {queued: pending}}
owners: {header: X-Owner, value: "{owner}"}
"""


@dataclass
class Jobs:
    """The service's state: jobs by id, job ids by (owner, key)."""

    flaw: str | None
    provider: str | None
    hedge: str | None = None
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # → (id, digest)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrivals: dict[tuple[str, str], int] = field(default_factory=dict)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    workers: list[threading.Thread] = field(default_factory=list)

    def scope(self, owner: str, key: str) -> tuple[str, str]:
        return ("*", key) if self.flaw == "ignores-owner" else (owner, key)

    def create(self, owner: str, key: str, text: str) -> tuple[int, dict[str, Any], bool]:
        """(status, job or problem, replayed)."""
        digest = hashlib.sha256(text.encode()).hexdigest()
        scope = self.scope(owner, key)
        if self.flaw == "check-then-insert":
            found = self.keys.get(scope)
            if found is None:
                self._race_window(scope)
                return 201, self._insert(scope, owner, text, digest), False
        else:
            with self.lock:
                found = self.keys.get(scope)
                if found is None:
                    return 201, self._insert(scope, owner, text, digest), False
        job_id, first = found
        if first != digest and self.flaw != "replays-other-body":
            return 409, {"error": "idempotency_key_reused"}, False
        return 200, self.jobs[job_id], True

    def _race_window(self, scope: tuple[str, str]) -> None:
        """A slow insert: the miss waits (bounded) until a duplicate has missed too."""
        with self.arrived:
            self.arrivals[scope] = self.arrivals.get(scope, 0) + 1
            self.arrived.notify_all()
            self.arrived.wait_for(lambda: self.arrivals[scope] > 1, RACE_WINDOW_S)

    def _insert(self, scope: tuple[str, str], owner: str, text: str,
                digest: str) -> dict[str, Any]:
        job_id = f"job-{uuid.uuid4().hex[:12]}"
        job: dict[str, Any] = {"id": job_id, "owner": owner, "status": "queued", "result": None,
                               "text": text}
        self.jobs[job_id] = job
        self.keys[scope] = (job_id, digest)
        if self.provider is not None:
            worker = threading.Thread(target=self._work, args=(job,), daemon=True)
            self.workers.append(worker)
            worker.start()
        return job

    def _work(self, job: dict[str, Any]) -> None:
        job["status"] = "running"
        try:
            for base in (self.provider, self.hedge):
                if base is None:
                    continue
                answer = httpx.post(f"{base}/v1/chat/completions", timeout=10,
                                    headers={"Authorization": "Bearer sk-test"}, json={
                    "model": "gpt-test", "messages": [{"role": "user", "content": job["text"]}]})
                answer.raise_for_status()
            job["result"] = {"text": answer.json()["choices"][0]["message"]["content"]}
            job["status"] = "succeeded"
        except (httpx.HTTPError, KeyError, ValueError):
            job["status"] = "failed"


def _handler(jobs: Jobs) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return None

        def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/healthz":
                return self._answer(200, {"ok": True})
            owner = self.headers.get("X-Owner")
            if not owner:
                return self._answer(401, {"error": "no_owner"})
            job = jobs.jobs.get(self.path.removeprefix("/jobs/")) \
                if self.path.startswith("/jobs/") else None
            if job is None or (job["owner"] != owner and jobs.flaw != "ignores-owner"):
                return self._answer(404, {"error": "not_found"})
            return self._answer(200, _public(job))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/jobs":
                return self._answer(404, {"error": "not_found"})
            if jobs.flaw == "refuses-all":
                return self._answer(422, {"error": "invalid_body", "detail": "refused"})
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if not isinstance(body, dict) or set(body) != {"text"} or \
                    not isinstance(body["text"], str):
                return self._answer(422, {"error": "invalid_body",
                                          "detail": "send {\"text\": \"…\"}"})
            key, owner = self.headers.get("Idempotency-Key"), self.headers.get("X-Owner")
            if not key:
                return self._answer(400, {"error": "idempotency_key_missing"})
            if not owner:
                return self._answer(401, {"error": "no_owner"})
            status, job, replayed = jobs.create(owner, key, raw.decode())
            headers = {"Idempotent-Replayed": "true"} if replayed else {}
            return self._answer(status, _public(job) if "id" in job else job, headers)

    return Handler


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: job[k] for k in ("id", "status", "result")}


@contextmanager
def twin(flaw: str | None = None, *, provider: str | None = None,
         hedge: str | None = None) -> Iterator[str]:
    """The service (with ``flaw``, one of :data:`FLAWS`) on a loopback port: its base URL."""
    assert flaw is None or flaw in FLAWS, flaw
    jobs = Jobs(flaw, provider, hedge)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(jobs))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        for worker in jobs.workers:
            worker.join(timeout=10)
