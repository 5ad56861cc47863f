"""Failover drills: script the providers behind a running gateway and count what one request costs.

The user starts the gateway on a test copy of its LiteLLM config whose deployments' ``api_base``
are loopback addresses. The drill starts a
:class:`~harness.providers.recording.RecordingFake` on each of those addresses, then per drill
scripts the primary group's deployments (hang past the
gateway's timeout, answer after it, 429/529 overload, reset after reading the request, a stream
cut after its first bytes; every other deployment answers), sends requests through the gateway
by model group, waits until every provider call has ended, and reports per request: the provider
calls it caused (counted at each fake), the billed completions, whether a late primary answer
was delivered or billed, which deployment answered and whether that fallback is certified for
the group's contract, whether the retries carried an idempotency key, and how long the client
waited. A violation: one request that caused two billed completions, reached an uncertified
fallback, or — the primary having failed as scripted — left the client without a whole answer
(an error, or a stream cut short): failover did not happen.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.domain.errors import ConfigError
from harness.gateways.litellm_config import LiteLLMConfig, LiteLLMDeployment
from harness.providers.recording import STREAM_CUT, Received, RecordingFake
from harness.providers.secrets import Secret, redact

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
IDEMPOTENCY_HEADERS = ("idempotency-key", "x-idempotency-key")
MAX_DRILL_TIMEOUT_S = 30.0
LITELLM_DEFAULT_TIMEOUT_S = 600.0
# (provider id, contract) -> (certified, why); None when the group serves no contract.
Judge = Callable[[str], tuple[bool, str] | None]


@dataclass(frozen=True, slots=True)
class Drill:
    """One scripted failure of the primary group's deployments."""

    name: str
    description: str
    behaviour: str  # the primary's behaviour; "{late}" is filled in from the gateway's timeout
    stream: bool = False


DRILLS: dict[str, Drill] = {d.name: d for d in (
    Drill("hang", "the primary reads the request and never answers (past the gateway's "
          "timeout)", "hang"),
    Drill("late", "the primary answers, but only after the gateway's timeout", "{late}"),
    Drill("overload-429", "the primary refuses with 429 (rate limited)", "status:429"),
    Drill("overload-529", "the primary refuses with 529 (overloaded)", "status:529"),
    Drill("reset", "the primary reads the request, then resets the connection",
          "reset-after-send"),
    Drill("stream-cut", "the primary starts a stream, then cuts it after the first bytes",
          STREAM_CUT, stream=True),
)}


@dataclass
class RequestResult:
    """One client request through the gateway, and what it caused at the providers."""

    tag: str
    status: int | None  # the gateway's HTTP status to the client (None: no answer)
    error: str  # the client-side error, if any
    waited_s: float
    stream_complete: bool | None  # streamed requests: did the stream end properly?
    answered_by: str | None  # the deployment whose answer the client got
    calls: dict[str, int]  # deployment -> provider calls (deliveries)
    outcomes: dict[str, list[str]]  # deployment -> how each call ended
    billed: int
    late_primary: str  # "" | "billed, not delivered" | "delivered and billed"
    retries: int  # provider calls after the first
    retries_with_key: int  # …that carried an idempotency key
    fallback: str | None  # the answering deployment when it is not the primary group's
    fallback_certified: bool | None  # None: unknown (no contract, or not a fallback)
    fallback_why: str
    unsettled: list[str] = field(default_factory=list)  # calls still open at the deadline
    reached_primary: bool = True  # the scripted failure happened (a primary got the request)

    @property
    def provider_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def whole_answer(self) -> bool:
        """Did the client get a whole answer (HTTP 200; a stream that ended properly)?"""
        return self.status == 200 and not self.error and self.stream_complete is not False

    def broken_answer(self) -> str:
        """What the client got instead of a whole answer, in words."""
        if self.status == 200 and self.stream_complete is False:
            return ("a cut stream (HTTP 200, then the stream broke off before its end"
                    + (f": {self.error}" if self.error else "") + ")")
        if self.status is None:
            return f"no answer ({self.error or 'no response'})"
        return f"HTTP {self.status}" + (f" ({self.error})" if self.error else "")

    def violations(self) -> list[str]:
        out = []
        if self.reached_primary and not self.whole_answer:
            out.append(f"failover did not happen: the primary failed and the client received "
                       f"{self.broken_answer()}")
        if self.billed >= 2:
            out.append(f"one request caused {self.billed} billed completions "
                       f"({_calls_text(self.outcomes)})")
        if self.fallback is not None and self.fallback_certified is False:
            out.append(f"reached fallback {self.fallback!r}, which is not certified: "
                       f"{self.fallback_why}")
        return out

    def unknowns(self) -> list[str]:
        out = []
        if self.fallback is not None and self.fallback_certified is None:
            out.append(f"reached fallback {self.fallback!r}: {self.fallback_why}")
        if self.unsettled:
            out.append(f"provider call(s) still open when the drill stopped waiting: "
                       f"{', '.join(self.unsettled)}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.tag, "client_status": self.status, "client_error": self.error,
            "client_wait_s": round(self.waited_s, 3), "stream_complete": self.stream_complete,
            "answered_by": self.answered_by, "provider_calls": self.provider_calls,
            "calls": self.calls, "outcomes": self.outcomes, "billed_completions": self.billed,
            "late_primary_answer": self.late_primary or None, "retries": self.retries,
            "retries_with_idempotency_key": self.retries_with_key,
            "fallback": self.fallback, "fallback_certified": self.fallback_certified,
            "fallback_why": self.fallback_why, "violations": self.violations(),
            "unknowns": self.unknowns(),
        }


@dataclass
class DrillResult:
    drill: Drill
    primary_behaviour: str
    requests: list[RequestResult]
    reason: str = ""  # why the drill is unknown when its scripted step did not happen

    @property
    def verdict(self) -> str:
        if any(r.violations() for r in self.requests):
            return "failed"
        if self.reason or any(r.unknowns() for r in self.requests):
            return "unknown"
        return "passed"

    def to_json(self) -> dict[str, Any]:
        return {"drill": self.drill.name, "description": self.drill.description,
                "primary_behaviour": self.primary_behaviour, "verdict": self.verdict,
                "reason": self.reason or None,
                "requests": [r.to_json() for r in self.requests]}


@dataclass
class DrillReport:
    gateway: str
    group: str
    contract: str | None
    gateway_timeout_s: float
    drills: list[DrillResult]

    @property
    def exit_code(self) -> int:
        verdicts = {d.verdict for d in self.drills}
        return 1 if "failed" in verdicts else 3 if "unknown" in verdicts else 0

    def to_json(self) -> dict[str, Any]:
        return {"gateway": self.gateway, "model_group": self.group, "contract": self.contract,
                "gateway_timeout_s": self.gateway_timeout_s, "exit_code": self.exit_code,
                "drills": [d.to_json() for d in self.drills]}


@dataclass
class Deployed:
    """A deployment of the drill, the fake standing in for it, and whether it is a primary."""

    id: str
    deployment: LiteLLMDeployment
    fake: RecordingFake
    primary: bool
    server: Any = None


def gateway_timeout(config: LiteLLMConfig, deployment: LiteLLMDeployment) -> float:
    """The seconds the gateway waits for this deployment (LiteLLM's precedence)."""
    data = config.source.data or {}
    for value in (deployment.params.get("timeout"),
                  (data.get("router_settings") or {}).get("timeout"),
                  (data.get("litellm_settings") or {}).get("request_timeout")):
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                break
    return LITELLM_DEFAULT_TIMEOUT_S


def plan_deployments(
    config: LiteLLMConfig, group: str, provider_ids: dict[int, str]
) -> list[tuple[str, LiteLLMDeployment, bool, str, int, str]]:
    """(id, deployment, primary?, host, port, kind) for the group and everything it falls back
    to; ConfigError when an ``api_base`` is not a loopback address of its own."""
    groups = config.groups()
    if group not in groups:
        raise ConfigError(f"model group {group!r} is not in {config.path}", field="--model",
                          fix=f"use one of: {', '.join(sorted(groups))}")
    reach, queue = [group], [group]
    while queue:
        current = queue.pop(0)
        nexts = [t for e in config.fallbacks if e.group == current for t in e.fallbacks]
        nexts += [t for d in config.default_fallbacks for t in d.groups]
        for target in nexts:
            if target not in reach:
                reach.append(target)
                queue.append(target)
    out = []
    seen: dict[tuple[str, int], str] = {}
    for g in reach:
        for d in groups[g]:
            pid = provider_ids[d.index]
            where = config.where(("model_list", d.index, "litellm_params", "api_base"))
            parts = urlsplit(d.api_base or "")
            if parts.hostname not in LOOPBACK or not parts.port:
                raise ConfigError(
                    f"deployment {pid!r} has api_base {d.api_base!r}: a drill answers in place "
                    "of the providers, on loopback addresses only",
                    file=str(config.path), line=config.source.line_of(
                        ("model_list", d.index, "litellm_params", "api_base")) or d.line,
                    field=f"model_list[{d.index}].litellm_params.api_base",
                    fix="drill a test copy of the config whose api_base values are "
                        "http://127.0.0.1:<free port>, with the gateway started on that copy",
                )
            key = (parts.hostname, parts.port)
            if key in seen:
                raise ConfigError(
                    f"deployments {seen[key]!r} and {pid!r} share {d.api_base}: the drill could "
                    "not tell their calls apart", file=where.split(":")[0],
                    field=f"model_list[{d.index}].litellm_params.api_base",
                    fix="give each deployment its own port in the test copy")
            seen[key] = pid
            prefix = d.model.partition("/")[0] if "/" in d.model else (
                "anthropic" if d.model.startswith("claude") else "openai")
            kind = "anthropic-messages" if prefix == "anthropic" else "openai-chat"
            out.append((pid, d, g == group, parts.hostname, parts.port, kind))
    return out


def run_drills(
    *,
    gateway: str,
    config: LiteLLMConfig,
    group: str,
    provider_ids: dict[int, str],
    drills: Sequence[str],
    api_key: Secret | None,
    judge: Judge,
    contract: str | None,
    requests: int = 1,
    client_timeout_s: float = 120.0,
    on_request: Callable[[str, RequestResult], None] | None = None,
) -> DrillReport:
    """Start the fakes, run each drill's requests through the gateway, stop the fakes."""
    from harness.providers.fake_server import FakeServer  # uvicorn: the [serve] extra

    planned = plan_deployments(config, group, provider_ids)
    primaries = [d for (_, d, primary, *_rest) in planned if primary]
    timeout = max(gateway_timeout(config, d) for d in primaries)
    if timeout > MAX_DRILL_TIMEOUT_S:
        raise ConfigError(
            f"the gateway waits {timeout:g} s for {group!r}: drilling a hang would take that long "
            "per call", file=str(config.path), line=primaries[0].line,
            field=f"model_list[{primaries[0].index}].litellm_params.timeout",
            fix="set `timeout: 1` (or router_settings.timeout) in the test copy of the config",
        )
    late_ms = round((timeout + max(1.0, timeout / 2)) * 1000)
    deployed = [Deployed(pid, d, RecordingFake(kind, name=pid), primary)
                for pid, d, primary, _host, _port, kind in planned]
    started = []
    try:
        for item, (_pid, _d, _p, host, port, _kind) in zip(deployed, planned, strict=True):
            item.server = FakeServer(item.fake, host=host, port=port)
            item.server.start()
            started.append(item.server)
        results = []
        with httpx.Client(timeout=client_timeout_s) as client:
            for name in drills:
                drill = DRILLS[name]
                behaviour = drill.behaviour.replace("{late}", f"slow:{late_ms}")
                for item in deployed:
                    item.fake.clear()
                    item.fake.set_behaviour(behaviour if item.primary else "conformant")
                outcome = DrillResult(drill, behaviour, [])
                for _ in range(requests):
                    result = _one_request(client, gateway, group, drill, deployed, api_key,
                                          judge, settle_s=late_ms / 1000 + 15)
                    outcome.requests.append(result)
                    if on_request:
                        on_request(name, result)
                if not any(r.calls.get(d.id) for r in outcome.requests for d in deployed
                           if d.primary):
                    first = outcome.requests[0]
                    answer = (f"HTTP {first.status}" if first.status is not None
                              else first.error or "no answer")
                    outcome.reason = (
                        f"no request reached the primary (the gateway answered {answer}), so "
                        "the scripted failure never happened: is the gateway running this config "
                        "with this key? is the primary cooling down after an earlier drill?")
                results.append(outcome)
    finally:
        for server in started:
            server.stop()
    return DrillReport(gateway, group, contract, timeout, results)


def _one_request(
    client: httpx.Client, gateway: str, group: str, drill: Drill, deployed: list[Deployed],
    api_key: Secret | None, judge: Judge, *, settle_s: float,
) -> RequestResult:
    tag = f"drill-{uuid.uuid4().hex[:12]}"
    body: dict[str, Any] = {
        "model": group, "max_tokens": 16,
        "messages": [{"role": "user", "content": f"failover drill {tag}: answer in one word"}],
    }
    if drill.stream:
        body["stream"] = True
    headers = {"Idempotency-Key": tag}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key.reveal()}"
    url = f"{gateway.rstrip('/')}/chat/completions"
    status, error, complete, answered_header = None, "", None, None
    started = time.perf_counter()
    try:
        if drill.stream:
            with client.stream("POST", url, json=body, headers=headers) as response:
                status = response.status_code
                answered_header = response.headers.get("x-litellm-model-api-base")
                text = "".join(response.iter_text())
                complete = status == 200 and "[DONE]" in text
        else:
            response = client.post(url, json=body, headers=headers)
            status = response.status_code
            answered_header = response.headers.get("x-litellm-model-api-base")
            if status != 200:
                error = redact(_error_text(response))
    except httpx.HTTPError as exc:
        error = redact(f"{type(exc).__name__}: {exc}")
        if drill.stream:
            complete = False
    waited = time.perf_counter() - started
    unsettled = [d.id for d in deployed if not d.fake.wait_settled(settle_s)]
    records = {d.id: [r for r in d.fake.received() if r.tag == tag] for d in deployed}
    return _judge_request(tag, status, error, waited, complete, answered_header, deployed,
                          records, judge, unsettled)


def _judge_request(
    tag: str, status: int | None, error: str, waited: float, complete: bool | None,
    answered_header: str | None, deployed: list[Deployed],
    records: dict[str, list[Received]], judge: Judge, unsettled: list[str],
) -> RequestResult:
    calls = {pid: len(rs) for pid, rs in records.items() if rs}
    outcomes = {pid: [r.outcome for r in rs] for pid, rs in records.items() if rs}
    billed = sum(r.billed for rs in records.values() for r in rs)
    primaries = {d.id for d in deployed if d.primary}
    reached_primary = any(records.get(pid) for pid in primaries)
    late = ""
    for pid in primaries:
        for r in records.get(pid, []):
            if r.behaviour.startswith("slow:"):
                late = "delivered and billed" if r.outcome == "answered" else (
                    "billed, not delivered" if r.billed else late)
    answered_by = None
    if status == 200:
        by_base = {(d.deployment.api_base or "").rstrip("/"): d.id for d in deployed}
        answered_by = by_base.get((answered_header or "").rstrip("/"))
        if answered_by is None:  # no header: the deployment whose call was answered
            answered = [(r.ended_at or 0, pid) for pid, rs in records.items() for r in rs
                        if r.outcome in ("answered", "cut")]
            answered_by = max(answered)[1] if answered else None
    ordered = sorted((r for rs in records.values() for r in rs), key=lambda r: (r.at, r.seq))
    retries = ordered[1:]
    with_key = sum(1 for r in retries if any(h in r.headers for h in IDEMPOTENCY_HEADERS))
    fallback = answered_by if answered_by and answered_by not in primaries else None
    certified: bool | None = None
    why = ""
    if fallback is not None:
        verdict = judge(fallback)
        if verdict is None:
            why = "the model group serves no contract, so the fallback cannot be judged"
        else:
            certified, why = verdict
    return RequestResult(
        tag=tag, status=status, error=error, waited_s=waited, stream_complete=complete,
        answered_by=answered_by, calls=calls, outcomes=outcomes, billed=billed,
        late_primary=late, retries=len(retries), retries_with_key=with_key, fallback=fallback,
        fallback_certified=certified, fallback_why=why, unsettled=unsettled,
        reached_primary=reached_primary,
    )


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    message = data.get("error", {}).get("message") if isinstance(data, dict) else None
    return f"HTTP {response.status_code}: {str(message or json.dumps(data))[:200]}"


def _calls_text(outcomes: dict[str, list[str]]) -> str:
    return "; ".join(f"{pid}: {', '.join(o)}" for pid, o in outcomes.items())
