"""Schemathesis against the service's own OpenAPI, in-process (ASGI): no 5xx for any generated
request, every response conforms to the schema, schema-invalid requests are refused.

Each operation is fuzzed on its own, with its path ids pointing at real resources made fresh for
every example (a job; an attempt already dispatched, timed out, cancelled or beaten by a hedge),
so that generated bodies reach the store instead of stopping at 404. A short stateful run then
follows the documented links (job → attempt → event)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def test_stateful_sequences_along_the_links_conform(schema: Any) -> None:
    tokens = iter(SCENARIO_TOKENS)

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            Bearer.token = next(tokens)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CONFORMANCE, transport_kwargs=kwargs)

    Workflow.run(settings=settings(FUZZ, max_examples=25, stateful_step_count=8))
