"""Make the certification exchanges through the production client: live, recording or replaying.

One :class:`Channel` per (provider, contract): the provider's real client (``client_for``) on
the transport the mode calls for — the network, an in-process fake provider answering from the
contract's golden cases, a recorder in front of either, or a cassette player.

Every sample is a real job run by the production :class:`~harness.failover.FailoverRunner` on
an embedded store (a one-link chain: the provider under test), so the round trip sees exactly
what failover would have claimed as the job's result. A tap on the client keeps the raw reply
(or the classified error) for the schema check's evidence. One request per sample, no retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx

from harness.contracts.cassettes import (
    Cassette,
    RecordingTransport,
    ReplayTransport,
    cassette_path,
    exchange_key,
)
from harness.contracts.checks import Sample
from harness.contracts.fakes import golden_answer
from harness.contracts.model import Contract, Golden
from harness.contracts.render import render_golden
from harness.domain.entities import Intent
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.failover import FailoverResult, FailoverRunner, RunStatus
from harness.providers.base import ProviderClient, ProviderReply, ProviderRequest
from harness.providers.classify import ProviderCallError, unreached
from harness.providers.clients import client_for
from harness.providers.config import ChainLink, ProviderConfig
from harness.providers.fake import ANSWERS_HEADER
from harness.providers.fake_transport import fake_transport
from harness.store.base import Store
from harness.tls import verifying

Mode = Literal["live", "record", "replay"]
OWNER = "failover-harness-certification"


SEEDED_KINDS = frozenset({"openai-chat"})  # wire formats whose API takes a sampling seed
SEEDED_HOSTS = frozenset({"api.openai.com"})  # …and the hosts known to accept it


def sample_seed(salt: str, golden_id: str, index: int) -> int:
    """The per-sample seed: different for every sample and run, the same on replay."""
    digest = hashlib.sha256(f"{salt}\x00{golden_id}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Channel:
    """The way to one provider for one contract, and the cassette being written, if any.

    Every sample is a separate call (no response cache anywhere on the way) and, where the
    API takes one, carries its own seed, so samples are independent draws.
    """

    provider: ProviderConfig
    contract: Contract
    client: ProviderClient
    cassette: Cassette | None = None
    salt: str = ""
    replaying: Cassette | None = None  # replay: what the cassette holds
    tap: _AnswersTap | None = None

    @property
    def fake_answers(self) -> str | None:
        """What a fake provider said its answers come from (``x-fake-answers``), if it did."""
        return self.tap.seen if self.tap is not None else None

    @property
    def seeded(self) -> bool:
        """Send a per-sample seed? Only where the API is known to take one: OpenAI's own API
        (and our fakes). An OpenAI-*compatible* endpoint may refuse it — LiteLLM answers 400
        for ``seed`` to an Anthropic deployment — so a gateway or other host gets none."""
        # Through a gateway (--via) the deployment's own wire decides.
        upstream = self.provider.upstream or {}
        if str(upstream.get("kind", self.provider.kind)) not in SEEDED_KINDS:
            return False
        if self.provider.is_fake:
            return True
        host = urlsplit(str(upstream.get("base_url") or self.provider.base_url)).hostname
        return host in SEEDED_HOSTS

    def request_for(self, golden: Golden, index: int = 0) -> ProviderRequest | str:
        """The provider request for one sample of a golden case, or why it cannot be rendered."""
        rendered = render_golden(self.contract, golden)
        if rendered.error:
            return rendered.error
        return ProviderRequest(
            system=rendered.system, user=rendered.user, schema=dict(self.contract.schema),
            schema_name=self.contract.schema_name,
            seed=sample_seed(self.salt, golden.id, index) if self.seeded else None,
        )

    def available(self, golden: Golden, index: int) -> bool:
        """Whether this sample can be taken (a replay has only what was recorded)."""
        return self.replaying is None or f"{golden.id}#{index}" in self.replaying.exchanges

    async def exchange(self, golden: Golden, index: int, store: Store, run_id: str) -> Sample:
        """Run one sample as a job through the failover runner; never raises for a bad call."""
        golden_id = golden.id
        req = self.request_for(golden, index)
        if isinstance(req, str):
            return Sample(golden_id, index, error=f"not sent: {req}", runner="not run")
        key = f"{golden_id}#{index}"
        intent = Intent(
            contract=self.contract.id, input=dict(golden.input),
            params={"certification": run_id, "provider": self.provider.id, "sample": key},
        )
        # in a worker thread, like every store call of the runner: samples run concurrently
        created = await asyncio.to_thread(
            store.create_job, OWNER, f"{run_id}:{self.provider.id}:{key}", intent)
        job = created.job
        tap = _Tap(self.client)
        runner = FailoverRunner(
            store, OWNER, clients={self.provider.id: tap},  # type: ignore[dict-item]
            eligibility=_OneLink(),
        )
        link = ChainLink(provider=self.provider.id, failover="auto")
        token = exchange_key.set(key)  # copied into the runner's call task: names the cassette
        try:
            result = await runner.run(job.id, [link], req, contract_id=self.contract.id)
        finally:
            exchange_key.reset(token)
        ran = _describe(result)
        stored = result.result if result.status is RunStatus.SUCCEEDED else None
        if tap.error is not None:
            return Sample(
                golden_id, index, error=f"{tap.error.classification}: {tap.error.message}",
                runner=ran,
                unreached=unreached(tap.error) or gateway_refusal(self.provider, tap.error),
                refused=refusal(tap.error),
            )
        reply = tap.reply
        assert reply is not None, ran
        return Sample(
            golden_id, index, text=reply.text, parsed=reply.parsed,
            finish_reason=reply.finish_reason, refusal=reply.refusal, latency_s=reply.latency_s,
            input_tokens=reply.usage.input_tokens,
            stored=stored if isinstance(stored, dict) else None, runner=ran,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.tap is not None:
            await self.tap.aclose()


#: words of a gateway's own 4xx about a header, auth or routing (Portkey: "Either
#: x-portkey-config or x-portkey-provider header is required"; LiteLLM: "Invalid model name")
_REFUSAL_WORDS = ("header", "x-portkey", "config", "route", "routing", "authenticat",
                  "unauthori", "forbidden", "api key", "virtual key", "invalid model name",
                  "no deployment", "not allowed")


def gateway_refusal(cfg: ProviderConfig, exc: ProviderCallError) -> str:
    """Through a gateway, its own refusal (a 4xx naming a header, auth or routing): the
    provider behind it was never reached, so the call is no evidence about it ("" otherwise).
    The reason quotes the gateway, so the fix can name what it asked for."""
    if not cfg.via or not refusal(exc):
        return ""
    text = exc.message.lower()
    if not any(word in text for word in _REFUSAL_WORDS):
        return ""
    return f"the gateway refused the request ({refusal(exc)})"


#: words of a 4xx about what the contract asks (its schema, its prompts' length): the provider
#: read the request and cannot do it, which is evidence about the contract, not a refusal
_CONTRACT_WORDS = ("response_format", "json_schema", "schema", "context length",
                   "context_length", "context window", "maximum context", "max_tokens",
                   "too many tokens", "prompt is too long")


def refusal(exc: ProviderCallError) -> str:
    """``HTTP 400: <what the server said>`` when the call was refused before any answer (a 4xx
    other than a timeout or a rate limit: a wrong header, key, route or address), else "" —
    also for a 4xx about what the contract asks (its schema, its length). A provider whose
    every call is refused so answered nothing: judgement.py leaves it undecided, whoever
    refused (a gateway in front of it or the provider itself)."""
    if exc.status is None or not 400 <= exc.status < 500 or exc.status in (408, 429):
        return ""
    if any(word in exc.message.lower() for word in _CONTRACT_WORDS):
        return ""
    said = re.sub(r"^.*?HTTP \d{3}(?: \S+)?: ", "", exc.message, count=1)
    said = re.sub(r" \[(failed|unknown): [^\]]*\]$", "", said)  # the classification trailer
    try:  # a JSON error body: its message, not the whole body
        body = json.loads(said)
        said = str(body.get("message") or body.get("error", {}).get("message") or said)
    except (ValueError, AttributeError):
        pass
    return f"HTTP {exc.status}: {said[:200]}"


#: gateways forward the provider's own response headers under a prefix (LiteLLM:
#: ``llm_provider-x-fake-answers``): a fake behind a gateway is still a fake
GATEWAY_HEADER_PREFIXES = ("", "llm_provider-")


class _AnswersTap(httpx.AsyncBaseTransport):
    """Passes everything through; notes a fake provider's ``x-fake-answers`` header (also as a
    gateway forwards it)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seen: str | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        found = next((response.headers[prefix + ANSWERS_HEADER]
                      for prefix in GATEWAY_HEADER_PREFIXES
                      if prefix + ANSWERS_HEADER in response.headers), None)
        if found:
            self.seen = found
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _describe(result: FailoverResult) -> str:
    """The run's ending without its random ids: ``exhausted: attempt failed (invalid_json)``."""
    parts = []
    for attempt in result.attempts:
        code = (attempt.error or {}).get("code")
        parts.append(f"attempt {attempt.state}" + (f" ({code})" if code else ""))
    return f"{result.status}" + (f": {', '.join(parts)}" if parts else "")


class _Tap:
    """The production client, unchanged, keeping what it returned or raised for the evidence."""

    def __init__(self, client: ProviderClient) -> None:
        self.client = client
        self.reply: ProviderReply | None = None
        self.error: ProviderCallError | None = None

    async def complete(self, req: ProviderRequest) -> ProviderReply:
        try:
            self.reply = await self.client.complete(req)
        except ProviderCallError as exc:
            self.error = exc
            raise
        return self.reply


class _OneLink:
    """Eligibility for a one-link certification chain: the runner never asks (no failover)."""

    def is_eligible(self, provider_id: str, contract_id: str) -> tuple[bool, str]:
        return False, "a certification job has one link; there is nothing to fail over to"


def open_channel(
    provider: ProviderConfig,
    contract: Contract,
    *,
    mode: Mode,
    cassettes: Path | None,
    virtual_time: bool = True,
    adaptive: bool = False,
) -> Channel:
    """The channel for ``mode``; replay checks the cassette was made at today's hashes."""
    inner: httpx.AsyncBaseTransport | None = None
    cassette: Cassette | None = None
    if mode == "replay":
        assert cassettes is not None
        path = cassette_path(cassettes, provider.id, contract.id)
        cassette = Cassette.read(path, provider=provider.id, contract=contract.id)
        _check_cassette(cassette, provider, contract, adaptive=adaptive)
        tap = _AnswersTap(ReplayTransport(cassette))
        return Channel(
            provider, contract, client_for(provider, transport=tap), None,
            salt=cassette.salt, replaying=cassette, tap=tap,
        )
    if provider.is_fake:
        inner = fake_transport(
            provider.kind, str(provider.fake_behaviour), answer=golden_answer(contract),
            virtual_time=virtual_time, answers_from=f"golden {contract.id}",
        )
    transport: httpx.AsyncBaseTransport = inner or httpx.AsyncHTTPTransport(retries=0,
                                                                        verify=verifying())
    salt = secrets.token_hex(8)
    if mode == "record":
        assert cassettes is not None
        cassette = Cassette(
            cassette_path(cassettes, provider.id, contract.id), provider.id, contract.id,
            provider.config_hash(), contract.hash, salt=salt,
        )
        transport = RecordingTransport(transport, cassette)
    tap = _AnswersTap(transport)
    return Channel(
        provider, contract, client_for(provider, transport=tap), cassette, salt=salt, tap=tap
    )


def _check_cassette(
    cassette: Cassette, provider: ProviderConfig, contract: Contract, *, adaptive: bool = False
) -> None:
    fix = (
        f"record again: failover-harness certify --record --provider {provider.id} "
        f"--contract {contract.id}"
    )
    if cassette.config_hash != provider.config_hash():
        raise ConfigError(
            f"the cassette was recorded with another configuration of provider {provider.id!r}; "
            "replaying it would certify answers this configuration never gave",
            file=str(cassette.path), field="config_hash", fix=fix,
        )
    if cassette.contract_hash != contract.hash:
        raise ConfigError(
            f"the cassette was recorded against another version of contract {contract.id!r}",
            file=str(cassette.path), field="contract_hash", fix=fix,
        )
    # A fixed run needs K samples of every input; an adaptive one at least its first round.
    per_input = 1 if adaptive else contract.thresholds.samples
    wanted = {f"{g.id}#{i}" for g in contract.goldens for i in range(per_input)}
    missing = sorted(key for key in wanted if not cassette.holds(key))
    if missing:
        raise ConfigError(
            f"the cassette lacks {counted(len(missing), 'exchange')}, e.g. {missing[0]!r}",
            file=str(cassette.path), field="exchanges", fix=fix,
        )
