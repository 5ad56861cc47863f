"""Make the certification exchanges through the production client: live, recording or replaying.

One :class:`Channel` per (provider, contract): the provider's real client (``client_for``) on
the transport the mode calls for — the network, an in-process fake provider answering from the
contract's golden cases, a recorder in front of either, or a cassette player. One request per
sample, no retries; call errors keep the client's ``failed`` / ``unknown`` classification.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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
from harness.domain.errors import ConfigError
from harness.providers.base import ProviderClient, ProviderRequest
from harness.providers.classify import ProviderCallError
from harness.providers.clients import client_for
from harness.providers.config import ProviderConfig
from harness.providers.fake_transport import fake_transport

Mode = Literal["live", "record", "replay"]


@dataclass
class Channel:
    """The way to one provider for one contract, and the cassette being written, if any."""

    provider: ProviderConfig
    contract: Contract
    client: ProviderClient
    cassette: Cassette | None = None

    def request_for(self, golden: Golden) -> ProviderRequest | str:
        """The provider request for one golden case, or why it cannot be rendered."""
        rendered = render_golden(self.contract, golden)
        if rendered.error:
            return rendered.error
        return ProviderRequest(
            system=rendered.system, user=rendered.user, schema=dict(self.contract.schema),
            schema_name=self.contract.schema_name,
        )

    def build_body(self, system: str, user: str) -> dict[str, Any]:
        """The exact request body this provider's client sends (for the placement check)."""
        req = ProviderRequest(system, user, dict(self.contract.schema), self.contract.schema_name)
        return self.client.build_request_body(req)

    async def exchange(self, golden: Golden, index: int) -> Sample:
        """Send one sample request; a call error becomes a sample that says why."""
        golden_id = golden.id
        req = self.request_for(golden)
        if isinstance(req, str):
            return Sample(golden_id, index, error=f"not sent: {req}")
        token = exchange_key.set(f"{golden_id}#{index}")
        try:
            reply = await self.client.complete(req)
        except ProviderCallError as exc:
            return Sample(golden_id, index, error=f"{exc.classification}: {exc.message}")
        finally:
            exchange_key.reset(token)
        return Sample(
            golden_id, index, text=reply.text, parsed=reply.parsed,
            finish_reason=reply.finish_reason, refusal=reply.refusal, latency_s=reply.latency_s,
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def open_channel(
    provider: ProviderConfig,
    contract: Contract,
    *,
    mode: Mode,
    cassettes: Path | None,
    virtual_time: bool = True,
) -> Channel:
    """The channel for ``mode``; replay checks the cassette was made at today's hashes."""
    inner: httpx.AsyncBaseTransport | None = None
    cassette: Cassette | None = None
    if mode == "replay":
        assert cassettes is not None
        path = cassette_path(cassettes, provider.id, contract.id)
        cassette = Cassette.read(path, provider=provider.id, contract=contract.id)
        _check_cassette(cassette, provider, contract)
        transport: httpx.AsyncBaseTransport | None = ReplayTransport(cassette)
        return Channel(provider, contract, client_for(provider, transport=transport), None)
    if provider.is_fake:
        inner = fake_transport(
            provider.kind, str(provider.fake_behaviour), answer=golden_answer(contract),
            virtual_time=virtual_time,
        )
    transport = inner
    if mode == "record":
        assert cassettes is not None
        cassette = Cassette(
            cassette_path(cassettes, provider.id, contract.id), provider.id, contract.id,
            provider.config_hash(), contract.hash,
        )
        transport = RecordingTransport(inner or httpx.AsyncHTTPTransport(retries=0), cassette)
    return Channel(provider, contract, client_for(provider, transport=transport), cassette)


def _check_cassette(cassette: Cassette, provider: ProviderConfig, contract: Contract) -> None:
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
    wanted = {
        f"{g.id}#{i}" for g in contract.goldens for i in range(contract.thresholds.samples)
    }
    missing = sorted(wanted - set(cassette.exchanges))
    if missing:
        raise ConfigError(
            f"the cassette lacks {len(missing)} exchange(s), e.g. {missing[0]!r}",
            file=str(cassette.path), field="exchanges", fix=fix,
        )
