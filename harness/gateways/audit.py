"""Through a gateway, compare what the client sent with what the provider received.

When a provider is certified through a gateway (``via``), the samples travel client → gateway
→ provider. The schema check judges the gateway's answer; this audit asks the provider side,
when it is a failover-harness recording fake (``GET /_fake/received``):

- **who answered**: every sample must reach the upstream it was meant for. An upstream that saw
  no call means the gateway answered from elsewhere (or itself): the record is *unreached*,
  never a verdict on the provider. Fewer calls than sent, while another upstream got more than
  its own, means the gateway routed them elsewhere: *unknown*, naming that upstream;
- **the whole request**: the schema (``response_format``, or a tool / output format carrying
  it), the system prompt, the temperature against the contract's maximum, ``max_tokens``, and
  ``top_p``, ``stop`` and tools the client never sent. Each difference names the gateway and,
  when the source knows it, the line of its config that causes it.

Providers that are not our fakes cannot be asked: no check is added (no verdict without
evidence). :func:`gateway_audit` is handed to the certification by the command.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from harness.contracts.model import Contract
from harness.contracts.records import CertificationRecord, ContractCheck, Evidence, Redactor
from harness.contracts.render import render_golden
from harness.domain.verdicts import Promise
from harness.domain.words import counted
from harness.providers.config import ProviderConfig
from harness.providers.recording import CONTROL_HEADER, TOKEN_ENV
from harness.tls import verifying

if TYPE_CHECKING:  # annotations only: importing them would import the certifier
    from harness.contracts.certifier import PostAudit
    from harness.contracts.judgement import Pairing

CHECK = "gateway"
Where = Callable[[str, str | None], str]  # (provider, param) -> "config.json:12 (field)"


@dataclass(frozen=True, slots=True)
class Sent:
    """What the client sent (a provider's request settings) and where the gateway's config
    sets each parameter."""

    cfg: ProviderConfig
    where: Where | None

    def at(self, param: str) -> str:
        if self.where is None:
            return "in the gateway's config"
        return f"set at {self.where(self.cfg.id, param)}"


def gateway_audit(where: Where | None = None) -> PostAudit:
    """The post-audit for a certification through a gateway; ``where`` names config lines."""

    async def audit(records: list[CertificationRecord],
                    targets: list[Pairing]) -> list[CertificationRecord]:
        return await audit_through_gateway(records, targets, where)

    return audit


async def audit_through_gateway(
    records: Sequence[CertificationRecord], targets: Sequence[Pairing], where: Where | None = None,
) -> list[CertificationRecord]:
    """``records`` with a ``gateway`` check added where the provider side could be observed."""
    through = [t for t in targets if t.provider.via and t.provider.upstream]
    roots = {_root(str((t.provider.upstream or {}).get("base_url", ""))) for t in through}
    token = os.environ.get(TOKEN_ENV)  # a fake-provider's control token, when one is set
    async with httpx.AsyncClient(timeout=10, headers={CONTROL_HEADER: token} if token
                                 else None, verify=verifying()) as http:
        received = {root: await _received(http, root) for root in sorted(roots)}
        for root, bodies in received.items():
            if bodies is not None:
                await http.post(f"{root}/_fake/reset")
    by_key = {(t.provider.id, t.contract.id): t for t in through}
    calls = {r.key: _calls(r) for r in records}
    got: dict[str, int] = {}
    expected: dict[str, int] = {}
    for t in through:
        root = _root(str((t.provider.upstream or {}).get("base_url", "")))
        bodies = received.get(root)
        if bodies is None:
            continue
        key = (t.provider.id, t.contract.id)
        expected[root] = expected.get(root, 0) + calls.get(
            key, len(t.contract.goldens) * t.contract.thresholds.samples)
        got[root] = max(got.get(root, 0), len(_matching(t.contract, bodies)))
    out = []
    for record in records:
        target = by_key.get(record.key)
        root = _root(str(((target.provider.upstream or {}) if target else {}).get("base_url", "")))
        bodies = received.get(root) if target else None
        if target is None or bodies is None or record.unreached:
            out.append(record)
            continue
        out.append(_judge(record, target, bodies, root, got, expected, Sent(target.provider,
                                                                           where)))
    return out


def _judge(record: CertificationRecord, target: Pairing, bodies: list[dict[str, Any]], root: str,
           got: Mapping[str, int], expected: Mapping[str, int], sent: Sent) -> CertificationRecord:
    gateway = str(target.provider.via)
    upstream = (target.provider.upstream or {}).get("base_url", root)
    if got.get(root, 0) == 0 and _calls(record):
        others = [f"{r} ({counted(n, 'call')})" for r, n in got.items() if r != root and n]
        answered = (f"; the answers came from {', '.join(others)}" if others
                    else "; the gateway answered without it")
        reason = (f"the gateway ({gateway}) answered {counted(_calls(record), 'sample')}, but the "
                  f"upstream meant for them ({upstream}) received none{answered}")
        check = ContractCheck.build(CHECK, "unknown", f"unreached: {reason}",
                                  {"gateway": gateway, "observed": 0}, [Evidence("*", reason)])
        return replace(record, checks=(*record.checks, check), verdict="undecided",
                       unreached=reason)
    check = gateway_check(target.contract, gateway, _matching(target.contract, bodies), sent)
    elsewhere = [r for r, n in got.items() if r != root and n > expected.get(r, 0)]
    if got.get(root, 0) < expected.get(root, 0) and elsewhere:
        reason = (f"the gateway ({gateway}) routed {expected[root] - got[root]} of "
                  f"{counted(expected[root], 'sample')} meant for {upstream} elsewhere: "
                  f"{', '.join(elsewhere)} answered them")
        check = ContractCheck.build(CHECK, "unknown", reason, {**check.figures, "routed":
                                  expected[root] - got[root]}, [Evidence("*", reason)])
    verdict = ("ineligible" if check.decision == "broken" else "undecided"
               if check.decision == "unknown" and record.verdict == "eligible"
               else record.verdict)
    return replace(record, checks=(*record.checks, check), verdict=verdict)


def _calls(record: CertificationRecord) -> int:
    return record.sampling.calls if record.sampling is not None else 0


def gateway_check(contract: Contract, gateway: str, received: Sequence[Mapping[str, Any]],
                  sent: Sent | None = None) -> ContractCheck:
    """Did every sample reach the provider as the client sent it (see the module)?"""
    redact = Redactor()
    users = _users(contract)
    observed, evidence = 0, []
    dropped_schema = dropped_system = changed = 0
    for item in received:
        body = item.get("body")
        text = json.dumps(body, ensure_ascii=False)
        golden_id = next((gid for gid, (user, _) in users.items() if user in text), None)
        if golden_id is None:
            continue
        observed += 1
        keys = ", ".join(sorted(body)) if isinstance(body, dict) else type(body).__name__
        excerpt = redact.excerpt(f"provider received keys: {keys}")
        if not _contains(body, dict(contract.schema)):
            dropped_schema += 1
            fmt = body.get("response_format") if isinstance(body, dict) else None
            what = ("no response_format" if fmt is None
                    else f"response_format {json.dumps(fmt)[:80]} without the schema")
            evidence.append(Evidence(
                golden_id, f"the gateway ({gateway}) changed the request: the client sent the "
                f"JSON schema {contract.schema_name!r} (response_format json_schema); the "
                f"provider received {what}", excerpt))
        system = users[golden_id][1]
        if system and system not in text:
            dropped_system += 1
            evidence.append(Evidence(golden_id, f"the gateway ({gateway}) changed the request: "
                                     "the system prompt did not reach the provider", excerpt))
        if sent is not None and isinstance(body, dict):
            found = _parameters(contract, gateway, body, sent)
            changed += bool(found)
            evidence += [Evidence(golden_id, why, excerpt) for why in found]
    return _result(gateway, observed, evidence, dropped_schema, dropped_system, changed)


def _parameters(contract: Contract, gateway: str, body: Mapping[str, Any], sent: Sent) -> list[str]:
    """The sampling parameters the gateway changed, each with the config line that does it."""
    cfg, out = sent.cfg, []
    said = f"the gateway ({gateway}) changed the request"
    limit = contract.thresholds.max_temperature
    temperature = body.get("temperature", 1.0)  # OpenAI's and Anthropic's default
    if isinstance(temperature, int | float) and temperature > limit:
        out.append(f"{said}: the provider received temperature {temperature:g} (the client "
                   f"sent {cfg.temperature:g}; the contract allows at most {limit:g}), "
                   f"{sent.at('temperature')}")
    tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    if isinstance(tokens, int) and tokens < cfg.max_output_tokens:
        out.append(f"{said}: the provider received max_tokens {tokens} (the client sent "
                   f"{cfg.max_output_tokens}; answers may be cut), {sent.at('max_tokens')}")
    for name in ("top_p", "top_k", "stop", "stop_sequences", "frequency_penalty",
                 "presence_penalty"):
        if body.get(name) not in (None, [], ""):
            out.append(f"{said}: the provider received {name} {json.dumps(body[name])[:60]}, "
                       f"which the client never sent, {sent.at(name)}")
    tools = body.get("tools")
    if isinstance(tools, list) and any(not _contains(t, dict(contract.schema)) for t in tools):
        out.append(f"{said}: the provider received tools the client never sent, "
                   f"{sent.at('tools')}")
    return out


def _result(gateway: str, observed: int, evidence: list[Evidence], dropped_schema: int,
            dropped_system: int, changed: int) -> ContractCheck:
    passed = observed > 0 and not evidence
    if observed == 0:  # nothing to compare: no evidence either way
        summary = "no sample reached the provider through the gateway: nothing to compare"
    elif passed:
        summary = f"{counted(observed, 'request')} reached the provider as the client sent them"
    else:
        summary = (f"the gateway changed {len({e.input_id for e in evidence})} input(s)' "
                   f"requests: schema missing in {dropped_schema}, system prompt missing in "
                   f"{dropped_system}, sampling parameters changed in {changed} of {observed} "
                   f"received; {evidence[0].reason}")
    figures = {"gateway": gateway, "observed": observed, "schema_dropped": dropped_schema,
               "system_dropped": dropped_system, "parameters_changed": changed}
    decision: Promise = "unknown" if observed == 0 else "held" if passed else "broken"
    return ContractCheck.build(CHECK, decision, summary, figures, evidence)


def _users(contract: Contract) -> dict[str, tuple[str, str | None]]:
    """Golden id → (user prompt, system prompt), JSON-escaped as they appear in a body."""
    out = {}
    for golden in contract.goldens:
        rendered = render_golden(contract, golden)
        if rendered.error is None:
            system = json.dumps(rendered.system, ensure_ascii=False)[1:-1] if (
                rendered.system) else None
            out[golden.id] = (json.dumps(rendered.user, ensure_ascii=False)[1:-1], system)
    return out


def _matching(contract: Contract, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The received requests that carry one of the contract's golden prompts."""
    users = [user for user, _ in _users(contract).values()]
    return [item for item in bodies
            if any(u in json.dumps(item.get("body"), ensure_ascii=False) for u in users)]


def _contains(value: Any, wanted: Mapping[str, Any]) -> bool:
    """True if ``wanted`` appears in ``value`` (as an object with at least its keys/values)."""
    if isinstance(value, Mapping):
        if all(k in value and _same(value[k], v) for k, v in wanted.items()):
            return True
        return any(_contains(v, wanted) for v in value.values())
    if isinstance(value, list):
        return any(_contains(v, wanted) for v in value)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return _contains(json.loads(value), wanted)
        except ValueError:
            return False
    return False


def _same(got: Any, want: Any) -> bool:
    """Equal, allowing the gateway to add keys to objects (e.g. ``strict``) but not drop any."""
    if isinstance(want, Mapping):
        return isinstance(got, Mapping) and all(
            k in got and _same(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def _root(base_url: str) -> str:
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


async def _received(http: httpx.AsyncClient, root: str) -> list[dict[str, Any]] | None:
    """What a failover-harness fake at ``root`` received; None when it is not one of ours."""
    if not root.startswith("http"):
        return None
    try:
        response = await http.get(f"{root}/_fake/received")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, list) else None
