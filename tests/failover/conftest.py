"""Fixtures for the failover runner: a stub eligibility, fake providers, jobs on a real store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from harness.domain import Intent, Job, Policy
from harness.providers import ChainLink, FakeTransport, ProviderClient, ProviderRequest, client_for
from harness.providers.fake_transport import fake_transport
from harness.store import SqlStore
from tests.providers.conftest import TICKET_SCHEMA, make_config

OWNER = "alice"
GATE_TIMEOUT_S = 30.0  # a gate nobody opens fails its request instead of hanging the test
CONTRACT = "ticket_triage"


@dataclass
class StubEligibility:
    """Eligibility from a fixed set of certified providers; remembers every question."""

    certified: set[str]
    calls: list[tuple[str, str]] = field(default_factory=list)

    def is_eligible(self, provider_id: str, contract_id: str) -> tuple[bool, str]:
        self.calls.append((provider_id, contract_id))
        if provider_id in self.certified:
            return True, "eligible: certified at the current config hash"
        return False, "missing: no certification at the current config hash"


class Gate(httpx.AsyncBaseTransport):
    """Holds each request until ``release`` is set; ``entered`` is set when one arrives."""

    def __init__(self, inner: FakeTransport) -> None:
        self.inner = inner
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.entered.set()
        await asyncio.wait_for(self.release.wait(), GATE_TIMEOUT_S)  # never hangs a test
        return await self.inner.handle_async_request(request)


@dataclass
class Providers:
    """Clients by provider id, each on its own in-process fake (deliveries per provider)."""

    clients: dict[str, ProviderClient] = field(default_factory=dict)
    transports: dict[str, FakeTransport] = field(default_factory=dict)

    def add(self, pid: str, behaviour: str, kind: str = "openai-chat",
            wrap: Callable[[FakeTransport], httpx.AsyncBaseTransport] | None = None) -> None:
        transport = fake_transport(kind, behaviour, answer=ANSWERS.get(pid))
        self.transports[pid] = transport
        cfg = make_config(kind, f"fake://{behaviour}", id=pid)
        self.clients[pid] = client_for(cfg, transport=wrap(transport) if wrap else transport,
                                       env={})

    def deliveries(self) -> dict[str, int]:
        return {pid: t.deliveries.total for pid, t in self.transports.items()}


def _answer_from(pid: str) -> Callable[[str | None, str, dict[str, Any]], dict[str, Any]]:
    def answer(system: str | None, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"category": "billing", "priority": 2, "needs_human": False, "tags": [pid]}
    return answer


ANSWERS = {pid: _answer_from(pid) for pid in ("primary", "second", "third", "fallback")}


def chain(*links: str | tuple[str, str]) -> list[ChainLink]:
    """``chain("primary", ("fallback", "manual"))``: links with failover auto unless given."""
    out = []
    for link in links:
        pid, mode = (link, "auto") if isinstance(link, str) else link
        out.append(ChainLink(provider=pid, failover=mode))  # type: ignore[arg-type]
    return out


def new_job(store: SqlStore, key: str = "click-1", max_open_attempts: int = 1) -> Job:
    intent = Intent(contract=CONTRACT, input={"subject": "refund", "body": "charged twice"},
                    policy=Policy(max_open_attempts=max_open_attempts))
    return store.create_job(OWNER, key, intent).job


def states(store: SqlStore, job_id: str) -> list[tuple[str, str]]:
    return [(a.provider, a.state.value) for a in store.list_attempts(OWNER, job_id)]


def providers_of(entries: Iterable[tuple[str, str, str]]) -> Providers:
    p = Providers()
    for pid, behaviour, kind in entries:
        p.add(pid, behaviour, kind)
    return p


@pytest.fixture
def ticket() -> ProviderRequest:
    return ProviderRequest(system="You triage support tickets.", user="Refund: charged twice.",
                           schema=TICKET_SCHEMA, schema_name="ticket")
