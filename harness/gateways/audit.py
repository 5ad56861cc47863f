"""Through a gateway, compare what the client sent with what the provider received.

When a deployment is certified ``--via`` a gateway, the samples travel client → gateway →
provider. The schema check judges the gateway's answer; this check asks the provider side, when
it is a failover-harness fake that keeps what it received (``GET /_fake/received``), whether the
request arrived as the client sent it: the JSON schema (``response_format`` for OpenAI, a tool's
``input_schema`` or an output format for Anthropic) and the system prompt. A request that lost
them was changed by the gateway, and the evidence says so. Providers that are not our fakes
cannot be asked: no check is added for them (no verdict without evidence).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from harness.contracts.records import CertificationRecord, CheckResult, Evidence, Redactor
from harness.contracts.render import render_golden
from harness.contracts.stats import Decision

if TYPE_CHECKING:
    from harness.contracts.certifier import Target
    from harness.contracts.model import Contract

CHECK = "gateway"


async def audit_through_gateway(
    records: Sequence[CertificationRecord], targets: Iterable[Target]
) -> list[CertificationRecord]:
    """``records`` with a ``gateway`` check added where the provider side could be observed."""
    by_key = {(t.provider.id, t.contract.id): t for t in targets}
    out = []
    received_at: dict[str, list[dict[str, Any]] | None] = {}
    async with httpx.AsyncClient(timeout=10) as http:
        for record in records:
            target = by_key.get(record.key)
            via = getattr(target.provider, "via", None) if target else None
            upstream = getattr(target.provider, "upstream", None) if target else None
            if target is None or not via or not upstream or record.unreached:
                out.append(record)
                continue
            root = _root(upstream.get("base_url", ""))
            if root not in received_at:
                received_at[root] = await _received(http, root)
            bodies = received_at[root]
            if bodies is None:
                out.append(record)
                continue
            check = gateway_check(target.contract, str(via), bodies)
            verdict = ("ineligible" if check.decision == "fail" else "undecided"
                       if check.decision == "undecided" and record.verdict == "eligible"
                       else record.verdict)
            out.append(replace(record, checks=(*record.checks, check), verdict=verdict))
        for root, bodies in received_at.items():
            if bodies is not None:
                await http.post(f"{root}/_fake/reset")
    return out


def gateway_check(
    contract: Contract, gateway: str, received: Sequence[Mapping[str, Any]]
) -> CheckResult:
    """Did every sample reach the provider with the schema and the system prompt it was sent?"""
    redact = Redactor()
    users = {}
    for golden in contract.goldens:
        rendered = render_golden(contract, golden)
        if rendered.error is None:
            users[golden.id] = (rendered.user, rendered.system)
    schema = dict(contract.schema)
    observed, evidence = 0, []
    dropped_schema = dropped_system = 0
    for item in received:
        body = item.get("body")
        text = json.dumps(body, ensure_ascii=False)
        golden_id = next((gid for gid, (user, _) in users.items()
                          if json.dumps(user, ensure_ascii=False)[1:-1] in text), None)
        if golden_id is None:
            continue
        observed += 1
        system = users[golden_id][1]
        keys = ", ".join(sorted(body)) if isinstance(body, dict) else type(body).__name__
        if not _contains(body, schema):
            dropped_schema += 1
            fmt = body.get("response_format") if isinstance(body, dict) else None
            what = ("no response_format" if fmt is None
                    else f"response_format {json.dumps(fmt)[:80]} without the schema")
            evidence.append(Evidence(
                golden_id,
                f"the gateway ({gateway}) changed the request: the client sent the JSON schema "
                f"{contract.schema_name!r} (response_format json_schema); the provider received "
                f"{what}",
                redact.excerpt(f"provider received keys: {keys}"),
            ))
        if system and json.dumps(system, ensure_ascii=False)[1:-1] not in text:
            dropped_system += 1
            evidence.append(Evidence(
                golden_id,
                f"the gateway ({gateway}) changed the request: the system prompt did not reach "
                "the provider",
                redact.excerpt(f"provider received keys: {keys}"),
            ))
    passed = observed > 0 and not evidence
    if observed == 0:  # nothing to compare: no evidence either way
        summary = "no sample reached the provider through the gateway: nothing to compare"
    elif passed:
        summary = f"{observed} request(s) reached the provider as the client sent them"
    else:
        summary = (f"the gateway changed {len({e.input_id for e in evidence})} input(s)' "
                   f"requests: schema missing in {dropped_schema}, system prompt missing in "
                   f"{dropped_system} of {observed} received")
    figures = {"gateway": gateway, "observed": observed, "schema_dropped": dropped_schema,
               "system_dropped": dropped_system}
    decision: Decision = "undecided" if observed == 0 else "pass" if passed else "fail"
    return CheckResult.build(CHECK, decision, summary, figures, evidence)


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
