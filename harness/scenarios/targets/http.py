"""The HTTP target: any service speaking API.md, driven through the reference client.

Owners become bearer tokens through the tokens file ``serve`` takes (``{token: owner}``) or
``HARNESS_TOKENS``. Several base URLs (comma-separated) are replicas: requests rotate over them,
so a concurrent group lands on different replicas (the ``replicas`` capability needs two URLs
or more: one URL is one process, as far as the engine can tell). A request that got no response
is indeterminate (``info``) unless the client knows it was never sent; a request written to a
kept-alive connection the service had already closed is sent again on a new connection
(:mod:`transport`) and the reply says so.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from harness.domain.clock import ManualClock
from harness.domain.errors import ConfigError, UnsupportedTarget
from harness.scenarios.model import CAPABILITIES, Scenario
from harness.scenarios.targets.base import Reply, Target, TargetSession, redact
from harness.scenarios.targets.preflight import check_owners
from harness.scenarios.targets.transport import ResendingTransport, resending_transport
from harness.service.auth import ENV_TOKENS, load_tokens
from harness.service.client import HarnessClient, TransportFailure
from harness.service.client import Reply as ClientReply


def owner_tokens(tokens_file: str | Path | None, env: Mapping[str, str]) -> dict[str, str]:
    """Owner → bearer token, from the same sources as ``serve`` (validated by its loader)."""
    load_tokens(tokens_file, env)  # the service's own checks and messages (never the token)
    pairs: list[tuple[str, str]] = []
    if tokens_file:
        raw = yaml.safe_load(Path(tokens_file).read_text(encoding="utf-8"))
        pairs = [(str(token), str(owner)) for token, owner in raw.items()]
    else:
        for entry in env[ENV_TOKENS].split(","):
            token, _, owner = entry.strip().partition("=")
            if token:
                pairs.append((token, owner))
    owners: dict[str, str] = {}
    for token, owner in pairs:
        owners.setdefault(owner.strip(), token.strip())
    return owners


def split_urls(text: str) -> list[str]:
    """``http://a:1,http://b:2`` → the base URLs (each must be http:// or https://)."""
    urls = [u.strip().rstrip("/") for u in text.split(",") if u.strip()]
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UnsupportedTarget(
                f"{redact(url)!r} is not an HTTP base URL; write http://host:port "
                "(several replicas: http://host:8001,http://host:8002)"
            )
    return urls


class HttpSession(TargetSession):
    """API.md over HTTP for one run: one client per (owner, replica), rotating replicas."""

    def __init__(self, target: HttpTarget) -> None:
        self.target = target
        self.clients: dict[tuple[str, str], HarnessClient] = {}
        self.transports: dict[HarnessClient, ResendingTransport] = {}
        self.lock = threading.Lock()
        self.turn = itertools.count()

    def client(self, owner: str) -> HarnessClient:
        urls = self.target.urls
        with self.lock:
            url = urls[next(self.turn) % len(urls)]
            client = self.clients.get((owner, url))
            if client is None:
                transport = resending_transport(url, deadline_s=self.target.timeout_s)
                client = HarnessClient(url, self.target.tokens.get(owner),
                                       timeout=self.target.timeout_s, transport=transport)
                self.clients[(owner, url)] = client
                self.transports[client] = transport
        return client

    def _call(self, client: HarnessClient, send: Any, *, create: bool = False) -> Reply:
        transport = self.transports[client]
        try:
            reply: ClientReply = send()
        except TransportFailure as exc:
            transport.take_note()
            return Reply(0, None, detail=exc.message, never_sent=not exc.maybe_applied)
        replayed = reply.replayed if create and reply.ok else None
        return Reply(reply.status, reply.body, replayed=replayed, resent=transport.take_note())

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.request(
            "POST", "/v1/jobs", content=body_text.encode("utf-8"),
            headers={"Idempotency-Key": key, "Content-Type": "application/json"},
        ), create=True)

    def get_job(self, owner: str, job_id: str) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.get_job(job_id))

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.start_attempt(job_id, provider))

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.post_event(attempt_id, event))

    def list_attempts(self, owner: str, job_id: str) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.list_attempts(job_id))

    def list_races(self, owner: str, job_id: str) -> Reply:
        client = self.client(owner)
        return self._call(client, lambda: client.list_races(job_id))

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


class HttpTarget(Target):
    """A service speaking API.md at one or more base URLs (replicas)."""

    kind = "http"
    virtual_clock = False

    def __init__(
        self,
        urls: str,
        *,
        tokens_file: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        race_digest: str = "none",
    ) -> None:
        self.urls = split_urls(urls)
        if not self.urls:
            raise UnsupportedTarget("the HTTP target has no URL; write http://host:port")
        # one URL is one process as far as the engine can tell: replica scenarios would pass
        # vacuously against it
        self.capabilities = frozenset(
            c for c in CAPABILITIES if c != "replicas" or len(self.urls) > 1)
        # API.md does not say how payload_sha256 is computed: compared only when declared
        self.race_digest = race_digest
        env = os.environ if env is None else env
        if not tokens_file and not env.get(ENV_TOKENS):
            raise ConfigError(
                "an HTTP target needs a bearer token per scenario owner", field="--tokens-file",
                fix="pass --tokens-file tokens.yaml ({token: owner}, the file serve takes) or "
                f'set {ENV_TOKENS}="tok1=alice,tok2=bob"',
            )
        self.tokens = owner_tokens(tokens_file, env)
        self.timeout_s = timeout_s
        self._probed = False

    @property
    def description(self) -> str:
        return ",".join(redact(u) for u in self.urls)

    def _probe(self, session: HttpSession) -> None:
        """Every replica must answer ``GET /healthz`` before any scenario runs (else exit 2)."""
        owner = next(iter(self.tokens), "")
        for _ in self.urls:
            client = session.client(owner)
            try:
                health = client.healthz()
            except TransportFailure as exc:
                session.close()
                raise ConfigError(
                    f"cannot reach the target: {exc.message}", field="--target",
                    fix="start the service (failover-harness serve …) or fix the URL",
                ) from None
            if health.status == 404:  # API.md: GET /healthz → 200; 404 is a wrong base URL
                session.close()
                raise ConfigError(
                    f"GET /healthz answered 404 at {self.description}: is the base URL right?",
                    field="--target", fix="check --target's scheme, host, port and path prefix; "
                    "a service that does not speak docs/api.md needs --target-profile FILE")
        self._probed = True

    def not_applicable(self, scenario: Scenario) -> str | None:
        return super().not_applicable(scenario)

    def preflight(self) -> None:
        """Every replica answers ``/healthz``; every owner's token is accepted."""

        session = HttpSession(self)
        try:
            if not self._probed:
                self._probe(session)
            check_owners(session, self.tokens, self.description)
        finally:
            session.close()

    def unready(self, scenario: Scenario) -> tuple[str, str] | None:
        missing = sorted({s.actor for s in scenario.steps} - set(self.tokens))
        if missing:
            return (f"no token for {'owner' if len(missing) == 1 else 'owners'} "
                    f"{', '.join(missing)} in the tokens file",
                    f"add a token for {', '.join(missing)} to --tokens-file (or HARNESS_TOKENS)")
        return None

    @contextmanager
    def session(
        self, clock: ManualClock, run_id: str, concurrency: int
    ) -> Iterator[TargetSession]:
        session = HttpSession(self)
        if not self._probed:
            self._probe(session)
        try:
            yield session
        finally:
            session.close()
