"""Target profiles: drive a service whose API differs from API.md, described in YAML.

A profile says, per operation, the method and path, where the idempotency key goes, and where
the fields the checkers need are in the response (dotted paths); which status means "this key
was used with another body" (409 in API.md, 422 in the IETF idempotency-key draft); whether a
concurrent duplicate may be answered "in flight" (the engine then retries, and the checkers still
require one job id in the end); and which capabilities exist. Answers are translated into
API.md's shapes, so the engine and the checkers are unchanged. Example: docs/scenarios.md.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.contracts._yamlsrc import load_yaml
from harness.domain.clock import ManualClock
from harness.scenarios.model import Scenario
from harness.scenarios.targets.base import Reply, Target, TargetSession, redact
from harness.scenarios.targets.http import owner_tokens, split_urls

OperationName = Literal["create_job", "get_job", "start_attempt", "post_event",
                        "list_attempts", "list_races"]
_NEEDS: dict[str, tuple[OperationName, ...]] = {"jobs": ("create_job", "get_job"),
          "attempts": ("start_attempt", "post_event", "list_attempts", "list_races")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Operation(_Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    path: str = Field(min_length=1, pattern=r"^/")
    key_header: str | None = None
    body: Any = None
    fields: dict[str, str] = {}
    items: str | None = None
    values: dict[str, dict[str, str]] = {}


class Answer(_Strict):
    status: int = Field(ge=100, le=599)
    code_field: str | None = None
    code: str | None = None


class InFlight(Answer):
    max_retries: int = Field(default=50, ge=1, le=1000)


class Auth(_Strict):
    header: str = "Authorization"
    value: str = "Bearer {token}"


class Profile(_Strict):
    name: str = Field(min_length=1)
    capabilities: list[Literal["jobs", "attempts", "timeouts", "hedge"]] = ["jobs"]
    auth: Auth = Auth()
    headers: dict[str, str] = {}
    created_status: int = 201
    conflict: Answer = Answer(status=409)
    in_flight: InFlight | None = None
    operations: dict[OperationName, Operation]


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile; errors name the file, the line and the fix."""
    src = load_yaml(Path(path))
    if not isinstance(src.data, dict):
        raise src.error("a target profile must be a YAML mapping",
                        fix="start with name:, capabilities: and operations:")
    try:
        profile = Profile.model_validate(src.data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and "[" in p))
        fix = {"missing": "add the field", "extra_forbidden":
               "remove the field (or fix its spelling)"}.get(first["type"],
                                                            f"fix the value ({first['msg']})")
        raise src.error(first["msg"], loc, fix=fix) from None
    for capability in profile.capabilities:
        for op in _NEEDS.get(capability, ()):
            if op not in profile.operations:
                raise src.error(f"capability {capability!r} needs operation {op!r}",
                                ("operations",), fix=f"describe operations.{op}, or drop "
                                f"{capability!r} from capabilities")
    required: tuple[OperationName, ...] = ("create_job", "get_job")
    for name in required:
        if name not in profile.operations:
            raise src.error(f"operation {name!r} is missing", ("operations",),
                            fix=f"add operations.{name}: {{method: …, path: …, fields: "
                            "{id: …}}")
    if not profile.operations["create_job"].key_header:
        raise src.error("create_job has no key_header", ("operations", "create_job"),
                        fix="add key_header: Idempotency-Key (the header carrying the key)")
    return profile


def pick(body: Any, path: str | None) -> Any:
    """The value at dotted ``path`` in ``body`` (``data.id``, ``items.0.id``), else None."""
    if path is None:
        return None
    value = body
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _fill(template: Any, values: Mapping[str, Any]) -> Any:
    """``"{provider}"`` placeholders in a body template, recursively; ``"{event}"`` is the event."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        return template.format(**{k: v for k, v in values.items() if isinstance(v, str)})
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    return template


class ProfileSession(TargetSession):
    """API.md operations translated through a profile, over httpx."""

    def __init__(self, target: ProfileTarget) -> None:
        self.target = target
        self.profile = target.profile
        self.http = httpx.Client(transport=target.transport, timeout=target.timeout_s,
                                 headers=dict(self.profile.headers))
        self.turn = itertools.count()
        self.lock = threading.Lock()

    def close(self) -> None:
        self.http.close()

    def _send(self, owner: str, op_name: OperationName, values: dict[str, Any],
              content: bytes | None = None, key: str | None = None) -> httpx.Response | Reply:
        op = self.profile.operations[op_name]
        with self.lock:
            base = self.target.urls[next(self.turn) % len(self.target.urls)]
        headers = {}
        token = self.target.tokens.get(owner)
        if token is not None:
            headers[self.profile.auth.header] = self.profile.auth.value.format(token=token)
        if key is not None and op.key_header:
            headers[op.key_header] = key
        url = base + op.path.format(**{k: v for k, v in values.items() if isinstance(v, str)})
        if content is None and op.body is not None:
            content = json.dumps(_fill(op.body, values)).encode()
        if content is not None:
            headers["Content-Type"] = "application/json"
        try:
            return self.http.request(op.method, url, content=content, headers=headers)
        except httpx.TransportError as exc:
            never = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            return Reply(0, None, detail=f"{type(exc).__name__}", never_sent=never)

    def _matches(self, answer: Any, response: httpx.Response, body: Any) -> bool:
        if answer is None or response.status_code != answer.status:
            return False
        return answer.code is None or pick(body, answer.code_field) == answer.code

    def _translate(self, op_name: OperationName, response: httpx.Response | Reply) -> Reply:
        if isinstance(response, Reply):
            return response
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = response.text
        status = response.status_code
        if self._matches(self.profile.conflict, response, body):
            return Reply(409, {"code": "idempotency_key_reused", "status": status})
        if 200 <= status < 300:
            op = self.profile.operations[op_name]
            if op.items is not None:
                items = pick(body, op.items)
                mapped = [self._fields(op, item) for item in items] \
                    if isinstance(items, list) else None
                return Reply(status, mapped)
            if op_name == "create_job":
                status = 201 if status == self.profile.created_status else 200
            return Reply(status, self._fields(op, body))
        code = pick(body, "code") if isinstance(body, dict) else None
        if status == 404:
            code = "not_found"
        return Reply(status, {"code": code if isinstance(code, str) else f"http_{status}",
                              "status": status})

    @staticmethod
    def _fields(op: Operation, body: Any) -> dict[str, Any]:
        mapped = {ours: pick(body, theirs) for ours, theirs in op.fields.items()}
        for field_name, table in op.values.items():
            if mapped.get(field_name) in table:
                mapped[field_name] = table[mapped[field_name]]
        return mapped

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        content = body_text.encode("utf-8")
        in_flight = self.profile.in_flight
        retries = in_flight.max_retries if in_flight else 0
        for attempt in itertools.count():
            response = self._send(owner, "create_job", {}, content=content, key=key)
            if isinstance(response, httpx.Response) and in_flight is not None:
                try:
                    body = response.json() if response.content else None
                except ValueError:
                    body = None
                if self._matches(in_flight, response, body) and attempt < retries:
                    # The first request is still running: wait a little, ask again.
                    time.sleep(min(0.5, 0.005 * 2 ** min(attempt, 7)))
                    continue
            return self._translate("create_job", response)
        raise AssertionError("unreachable")  # pragma: no cover

    def get_job(self, owner: str, job_id: str) -> Reply:
        return self._translate("get_job", self._send(owner, "get_job", {"job_id": job_id}))

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
        return self._translate("start_attempt", self._send(
            owner, "start_attempt", {"job_id": job_id, "provider": provider}))

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply:
        values = {"attempt_id": attempt_id, "event": event, "type": event["type"]}
        op = self.profile.operations["post_event"]
        content = None if op.body is not None else json.dumps(event).encode()
        return self._translate("post_event",
                               self._send(owner, "post_event", values, content=content))

    def list_attempts(self, owner: str, job_id: str) -> Reply:
        return self._translate("list_attempts",
                               self._send(owner, "list_attempts", {"job_id": job_id}))

    def list_races(self, owner: str, job_id: str) -> Reply:
        return self._translate("list_races", self._send(owner, "list_races", {"job_id": job_id}))


class ProfileTarget(Target):
    """A service described by a target profile, at one or more base URLs."""

    kind = "http"
    virtual_clock = False

    def __init__(
        self,
        urls: str,
        profile: str | Path,
        *,
        tokens_file: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.urls = split_urls(urls)
        self.profile = load_profile(profile)
        env = os.environ if env is None else env
        self.tokens = owner_tokens(tokens_file, env) if (tokens_file or env.get(
            "HARNESS_TOKENS")) else {}
        self.transport = transport
        self.timeout_s = timeout_s
        self.capabilities = frozenset({*self.profile.capabilities, "owners", "replicas"})

    @property
    def description(self) -> str:
        return ",".join(redact(u) for u in self.urls)

    def not_applicable(self, scenario: Scenario) -> str | None:
        missing = sorted(scenario.requires - self.capabilities)
        if missing:
            return (f"needs {', '.join(missing)}, which profile {self.profile.name!r} does "
                    "not declare")
        actors = {s.actor for s in scenario.steps}
        if not self.tokens and len(actors) > 1:
            return "needs a bearer token per owner: pass --tokens-file"
        absent = sorted(actors - set(self.tokens)) if self.tokens else []
        if absent:
            return f"no token for owner(s) {', '.join(absent)} in the tokens file"
        return None

    @contextmanager
    def session(
        self, clock: ManualClock, run_id: str, concurrency: int
    ) -> Iterator[TargetSession]:
        session = ProfileSession(self)
        try:
            yield session
        finally:
            session.close()
