"""The drill's requests to the service, through its own API: submits, and looks at a job.

Two clients, each with a pool of its own: the looks are never queued behind submits (a chat call
holds its connection for the whole call). Every request is bounded (a total deadline, the
intent's budget, and a body limit: :class:`~harness.target.bounded.BoundedTransport`).

A look is made to arrive while it matters: at most :data:`LOOKS_AT_ONCE` of the watchers' looks
are in flight at once (each may be a new connection, and a small server's accept queue that
overflows drops it), a *held* look (an answer waits for it) goes at once, and a connection
attempt the service did not accept within a tenth of a second is tried again at once (see
:data:`CONNECT_TRIES`). I/O only: what the answers mean is the judge's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.drill.evidence import Observation, Submission
from harness.drill.watch import classify, fill, listed, read_chat, unreadable
from harness.providers.secrets import redact
from harness.scenarios.targets.transport import ResendingTransport, kept_alive
from harness.target.bounded import BoundedTransport, json_body
from harness.target.drill_profile import DrillProfile
from harness.target.drill_section import Listing
from harness.target.ids import fill_path
from harness.target.values import pick
from harness.tls import tls_for

#: the watchers' looks at jobs in flight at once, whatever the concurrency: each look may be a
#: new connection, and a small server's accept queue (Python's http.server: 5) that overflows
#: drops the connection attempt, which the client's kernel retries one second later; a look
#: that waits for its place here waits for a look, not a second
LOOKS_AT_ONCE = 4
#: a look's connection attempts: a dropped SYN (a full accept queue) is retried by the kernel
#: only one second later, so a look tries a new connection after 0.1 s, then 0.25 s, 1 s, and
#: then waits as long as the client does (None: a service far away answers the later ones)
CONNECT_TRIES: tuple[float | None, ...] = (0.1, 0.25, 1.0, None)


@dataclass(frozen=True)
class Clients:
    """The submits' client and the looks' client, to one service."""

    submits: httpx.Client
    looks: httpx.Client


@contextmanager
def clients_of(target: str, deadline_s: float, concurrency: int | None) -> Iterator[Clients]:
    """Both clients of ``target``, every request within ``deadline_s``."""
    connections = max(10, (concurrency or 64) * 3)

    def client(transport: httpx.BaseTransport) -> httpx.Client:
        return httpx.Client(base_url=target.rstrip("/"), timeout=deadline_s,
                            transport=transport)

    options: dict[str, Any] = {"deadline_s": deadline_s, "verify": tls_for(target),
                               "limits": kept_alive(connections)}
    # a look (a read) written to a kept-alive connection the service closed meanwhile is sent
    # again on a new one (Go's rule: harness.scenarios.targets.transport); a submit never is
    with client(BoundedTransport(**options)) as submits, \
            client(ResendingTransport(**options)) as looks:
        yield Clients(submits, looks)


@dataclass
class ServiceClient:
    """The requests of one drill to the service its profile describes."""

    profile: DrillProfile
    env: Mapping[str, str]
    clients: Clients
    now: Callable[[], float]  # the drill's clock
    stop: threading.Event
    budget: float  # how long a watcher waits for its place among the looks
    _looking: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(LOOKS_AT_ONCE))
    #: each job's URL, made once (the client parses a path at every request otherwise)
    _urls: dict[str, httpx.URL] = field(default_factory=dict)

    def submit(self, tag: str, key: str, stream: bool = False) -> Submission:
        """Submit one intent (``{tag}``, ``{key}`` filled in); a chat call is read whole."""
        submit = self.profile.section.submit
        marks = {"{tag}": tag, "{key}": key}
        headers = {k: fill(v, marks) for k, v in self.profile.headers(self.env).items()}
        body = fill(submit.body, marks)
        client = self.clients.submits
        at = self.now()
        try:
            if submit.kind == "chat":  # a gateway streams for the stream-cut drill
                if stream and isinstance(body, dict):
                    body = {**body, "stream": True}
                return read_chat(client, submit, headers, body, at, self.now, stream)
            response = client.request(submit.method, submit.path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            return Submission(at, None, error=redact(f"{type(exc).__name__}: {exc}"),
                              ended_at=self.now(), unreached=isinstance(
                                  exc, (httpx.ConnectError, httpx.ConnectTimeout)))
        try:
            data, unread = json_body(response), ""
        except ValueError:
            data, unread = None, unreadable(response)
        job = pick(data, submit.id_field)
        error = unread if response.is_success else redact(response.text[:200])
        return Submission(at, response.status_code, job_id=None if job is None else str(job),
                          error=error, ended_at=self.now())

    def observe(self, job: str, *, held: bool = False) -> Observation:
        """One look at ``job``: at most :data:`LOOKS_AT_ONCE` of the watchers' at once; a
        ``held`` look (an answer waits for it) goes at once."""
        if held:
            return self._observe(job)
        placed = self._looking.acquire(timeout=self.budget)  # else look anyway
        try:
            return self._observe(job)
        finally:
            if placed:
                self._looking.release()

    def listed(self, listing: Listing, job: str) -> int | None:
        """How many entries the service lists for ``job`` (None: it did not answer a list)."""
        return listed(self.clients.looks, listing, job,
                      self.profile.headers(self.env, "observe"))

    def _observe(self, job: str) -> Observation:
        observe = self.profile.section.observe
        if observe is None:  # the loader requires it wherever a job is watched
            raise ValueError("a job is watched only with drill.observe")
        url = self._urls.get(job)
        if url is None:  # the client's own joining of its base and the path, once per job
            url = self._urls[job] = self.clients.looks.build_request(
                observe.method, fill_path(observe.path, {"job_id": job})).url
        at = self.now()
        try:
            response = self._look(observe.method, url, self.profile.headers(self.env, "observe"))
        except httpx.HTTPError as exc:
            return Observation(at, "error", None, None, None, self.now(),
                               error=redact(f"no answer ({type(exc).__name__}: {exc})"))
        try:
            data = json_body(response)
        except ValueError:
            return Observation(at, "error", None, None, response.status_code, self.now(),
                               error=f"HTTP {response.status_code} and {unreadable(response)}")
        raw = pick(data, observe.status_field)
        result = pick(data, observe.result_field)
        text = None if result is None else (result if isinstance(result, str)
                                            else json.dumps(result))
        return Observation(at, classify(observe.statuses, raw), None if raw is None else str(raw),
                           text, response.status_code, self.now())

    def _look(self, method: str, url: httpx.URL, headers: dict[str, str]) -> httpx.Response:
        """A look's request; a connection attempt not accepted within :data:`CONNECT_TRIES`'s
        time is tried again at once (a look never sent is safe to send again)."""
        looks = self.clients.looks
        for connect in CONNECT_TRIES:
            timeout = looks.timeout if connect is None else httpx.Timeout(
                looks.timeout.read, connect=connect)
            try:
                return looks.request(method, url, headers=headers, timeout=timeout)
            except httpx.ConnectTimeout:
                if connect is None or self.stop.is_set():
                    raise
        raise AssertionError("CONNECT_TRIES ends with None")  # pragma: no cover
