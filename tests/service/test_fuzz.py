"""Schemathesis against the service's own OpenAPI, in-process (ASGI): no 5xx for any generated
request, every response conforms to the schema, schema-invalid requests are refused.

Each operation is fuzzed on its own, with its path ids pointing at real resources made fresh for
every example (a job; an attempt already dispatched, timed out, cancelled or beaten by a hedge),
so that generated bodies reach the store instead of stopping at 404. A short stateful run then
follows the documented links (job → attempt → event)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from harness.domain import Intent, Policy
from harness.service.app import create_app
from harness.service.auth import TokenTable
from harness.store import SqlStore, open_store
from tests.service.serving import ALICE_TOKEN, TOKENS

pytestmark = pytest.mark.slow

CONFORMANCE = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
FUZZ = settings(
    max_examples=30,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
OPERATIONS = [
    ("POST", "/v1/jobs"),
    ("GET", "/v1/jobs/{job_id}"),
    ("POST", "/v1/jobs/{job_id}/attempts"),
    ("GET", "/v1/jobs/{job_id}/attempts"),
    ("POST", "/v1/attempts/{attempt_id}/events"),
    ("GET", "/v1/jobs/{job_id}/races"),
    ("GET", "/healthz"),
]
# What has happened to the attempt an event is fuzzed against.
HISTORIES = [[], ["dispatched"], ["dispatched", "timed_out"], ["cancelled"], ["lost"]]
# Each stateful scenario runs as a fresh owner, so that no scenario sees another's jobs: the
# replies (201, then 200 or 409) must not depend on what earlier scenarios created.
SCENARIO_TOKENS = {f"tok-fuzz-{i:05d}-Xr8p": f"fuzz-{i}" for i in range(2000)}


class Bearer:
    """Schemathesis auth provider: every generated request carries the current owner's token."""

    token = ALICE_TOKEN

    def get(self, case: Any, ctx: Any) -> str:
        return Bearer.token

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture
def fuzz_store(tmp_path: Path) -> Iterator[SqlStore]:
    store = open_store(f"sqlite:///{tmp_path / 'fuzz.db'}")
    yield store
    store.close()


@pytest.fixture
def schema(fuzz_store: SqlStore) -> Any:
    app = create_app(fuzz_store, TokenTable({**TOKENS, **SCENARIO_TOKENS}))
    loaded = schemathesis.openapi.from_asgi("/openapi.json", app)
    loaded.auth.auth(refresh_interval=None)(Bearer)
    Bearer.token = ALICE_TOKEN
    return loaded


def real_ids(store: SqlStore, history: list[str]) -> dict[str, str]:
    """A fresh job of alice's and an attempt that went through ``history``."""
    intent = Intent(contract="c", input={"n": 1}, policy=Policy(max_open_attempts=2))
    job = store.create_job("alice", uuid.uuid4().hex, intent).job
    attempt = store.start_attempt("alice", job.id, "openai")
    for step in history:
        if step == "dispatched":
            store.dispatch("alice", attempt.id)
        elif step == "timed_out":
            store.time_out("alice", attempt.id)
        elif step == "cancelled":
            store.cancel("alice", attempt.id, "fuzz")
        else:  # a hedge wins first, so this attempt's claim will lose
            hedge = store.start_attempt("alice", job.id, "anthropic")
            store.succeed("alice", hedge.id, {"winner": True})
    return {"job_id": job.id, "attempt_id": attempt.id}


def fuzz_operation(
    schema: Any, store: SqlStore, method: str, path: str, mode: GenerationMode,
    checks: list[Any],
) -> None:
    operation = schema[path][method]

    @FUZZ
    @given(case=operation.as_strategy(mode), history=st.sampled_from(HISTORIES))
    def run(case: Any, history: list[str]) -> None:
        if case.path_parameters:
            ids = real_ids(store, history)
            case.path_parameters = {name: ids[name] for name in case.path_parameters}
        case.call_and_validate(checks=checks)

    run()


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_schema_valid_requests_never_5xx_and_conform(
    schema: Any, fuzz_store: SqlStore, method: str, path: str
) -> None:
    checks = [*CONFORMANCE] if path == "/healthz" else [*CONFORMANCE, ignored_auth]
    fuzz_operation(schema, fuzz_store, method, path, GenerationMode.POSITIVE, checks)


@pytest.mark.parametrize(("method", "path"), [op for op in OPERATIONS if op[1] != "/healthz"])
def test_schema_invalid_requests_are_refused_and_conform(
    schema: Any, fuzz_store: SqlStore, method: str, path: str
) -> None:
    checks = [*CONFORMANCE, negative_data_rejection]
    fuzz_operation(schema, fuzz_store, method, path, GenerationMode.NEGATIVE, checks)


# Numbers as JSON text, beyond what schema-driven generation reaches: integers past 2^53 and past
# the 4,300 digits int() converts, floats that overflow or underflow, every spelling of a number.
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(4290, 4310).map(lambda n: "-" + "1" * n),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e400", "1e-400", "1.0", "-0", "1E+2", "0.000001"]),
)


@FUZZ
@given(number=NUMBERS, where=st.sampled_from(["input", "params", "result"]))
def test_any_json_number_is_accepted_or_422_naming_its_field(
    fuzz_store: SqlStore, number: str, where: str
) -> None:
    app = create_app(fuzz_store, TokenTable(TOKENS))
    ids = real_ids(fuzz_store, []) if where == "result" else {}

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://fuzz.test") as http:
            headers = {"Authorization": f"Bearer {ALICE_TOKEN}"}
            if where == "result":
                body = f'{{"type": "succeeded", "result": {{"n": {number}}}}}'
                path = f"/v1/attempts/{ids['attempt_id']}/events"
            else:
                value = f'{{"n": {number}}}'
                body = (f'{{"contract": "c", "input": {value}}}' if where == "input"
                        else f'{{"contract": "c", "input": {{}}, "params": {value}}}')
                path, headers["Idempotency-Key"] = "/v1/jobs", uuid.uuid4().hex
            return await http.post(path, content=body.encode(), headers=headers)

    reply = asyncio.run(send())
    assert reply.status_code in (200, 201, 422), (reply.status_code, reply.text[:300])
    if reply.status_code == 422:
        assert f"{where}.n" in reply.json()["detail"]


def test_stateful_sequences_along_the_links_conform(schema: Any) -> None:
    tokens = iter(SCENARIO_TOKENS)

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            Bearer.token = next(tokens)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CONFORMANCE, transport_kwargs=kwargs)

    Workflow.run(settings=settings(FUZZ, max_examples=25, stateful_step_count=8))
