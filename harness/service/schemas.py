"""The OpenAPI description of API v1: body and reply schemas, and each route's responses.

The service validates bodies with the domain (``Intent.from_json``, the event rules), not with
these models; they exist to describe the wire format exactly, and the schemathesis tests hold
the two together (a body these schemas reject must be refused, every reply must match them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

PROBLEM_MEDIA_TYPE = "application/problem+json"
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- request bodies ----------------------------------------------------------------------------
class PolicyIn(_Closed):
    """How many attempts may be open at once: 2 allows one hedge."""

    max_open_attempts: Literal[1, 2] = 1


class JobRequest(_Closed):
    """The intent: the fingerprint is the SHA-256 of its RFC 8785 form, defaults filled in.

    Any JSON is accepted except what no store can keep (422, naming the field): a NUL
    character or a lone surrogate in a string, nesting deeper than 64 levels, integers
    beyond ±(2^53 − 1) (RFC 8785 cannot represent them exactly).
    """

    contract: Annotated[str, Field(min_length=1)]
    input: dict[str, Any]
    params: dict[str, Any] | None = None
    policy: PolicyIn | None = None


class AttemptRequest(_Closed):
    provider: Annotated[str, Field(min_length=1)]


class ProviderError(_Open):
    code: str
    message: str | None = None


class DispatchedEvent(_Closed):
    """starting → running: the provider request left."""

    type: Literal["dispatched"]


class TimedOutEvent(_Closed):
    """starting | running → unknown: never failed; the gate holds."""

    type: Literal["timed_out"]


class FailedEvent(_Closed):
    """starting | running | unknown → failed."""

    type: Literal["failed"]
    error: ProviderError


class SucceededEvent(_Closed):
    """→ succeeded, and the claim runs: the reply's outcome is won or lost."""

    type: Literal["succeeded"]
    result: dict[str, Any]


class CancelledEvent(_Closed):
    """starting | running | unknown → cancelled (out-of-band)."""

    type: Literal["cancelled"]
    reason: str = ""


EVENT_MODELS: dict[str, type[BaseModel]] = {
    "dispatched": DispatchedEvent,
    "timed_out": TimedOutEvent,
    "failed": FailedEvent,
    "succeeded": SucceededEvent,
    "cancelled": CancelledEvent,
}


# -- replies ---------------------------------------------------------------------------------
class Job(_Closed):
    id: str
    idempotency_key: str
    fingerprint: str
    contract: str
    input: dict[str, Any]
    params: dict[str, Any]
    policy: PolicyIn
    status: Literal["pending", "running", "succeeded", "failed", "cancelled"]
    version: int
    completed_by: str | None
    result: dict[str, Any] | None
    created_at: str
    updated_at: str


class Attempt(_Closed):
    id: str
    job_id: str
    provider: str
    state: Literal["starting", "running", "unknown", "succeeded", "failed", "cancelled"]
    read_version: int
    outcome: Literal["won", "lost"] | None
    error: dict[str, Any] | None
    result_sha256: str | None
    cancel_reason: str | None
    created_at: str
    updated_at: str


class Race(_Closed):
    attempt_id: str
    at: str
    payload_sha256: str
    winner_attempt_id: str | None
    reason: str


class Problem(_Open):
    """RFC 9457 problem details, with the machine ``code`` and any extra members."""

    type: str
    title: str
    status: int
    detail: str
    code: str


class Health(_Closed):
    status: Literal["ok"]
    store: str


_MODELS: list[type[BaseModel]] = [
    PolicyIn, JobRequest, AttemptRequest, ProviderError, *EVENT_MODELS.values(),
    Job, Attempt, Race, Problem, Health,
]


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def array_of(name: str) -> dict[str, Any]:
    return {"type": "array", "items": ref(name)}


EVENT_SCHEMA: dict[str, Any] = {
    "oneOf": [ref(m.__name__) for m in EVENT_MODELS.values()],
    "discriminator": {
        "propertyName": "type",
        "mapping": {k: ref(m.__name__)["$ref"] for k, m in EVENT_MODELS.items()},
    },
}
EVENT_REPLY_SCHEMA: dict[str, Any] = {
    "allOf": [ref("Attempt")],
    "description": "The attempt; on `succeeded`, `outcome` is the claim's: won or lost.",
}


def _link(operation_id: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": operation_id, "parameters": parameters}


# OpenAPI links: how a reply's ids feed the next calls (documentation, and stateful fuzzing).
JOB_LINKS = {
    "GetJob": _link("getJob", job_id="$response.body#/id"),
    "StartAttempt": _link("startAttempt", job_id="$response.body#/id"),
    "ListAttempts": _link("listAttempts", job_id="$response.body#/id"),
    "ListRaces": _link("listRaces", job_id="$response.body#/id"),
}
ATTEMPT_LINKS = {
    "PostEvent": _link("postEvent", attempt_id="$response.body#/id"),
    "GetJob": _link("getJob", job_id="$response.body#/job_id"),
    "StartAnotherAttempt": _link("startAttempt", job_id="$response.body#/job_id"),
    "ListRaces": _link("listRaces", job_id="$response.body#/job_id"),
}


def with_links(response: dict[str, Any], links: dict[str, Any]) -> dict[str, Any]:
    return {**response, "links": links}


def body(schema: dict[str, Any]) -> dict[str, Any]:
    """``openapi_extra`` for a required JSON request body."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def ok(description: str, schema: dict[str, Any], **headers: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }
    if headers:
        response["headers"] = {
            name.replace("_", "-"): {"description": text, "schema": {"type": "string"}}
            for name, text in headers.items()
        }
    return response


def problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_MEDIA_TYPE: {"schema": ref("Problem")}}}


SECURITY_SCHEME = "bearer"
SECURED: dict[str, Any] = {"security": [{SECURITY_SCHEME: []}]}
AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: problem("`unauthenticated`: no or unknown bearer token"),
    503: problem("`store_unavailable`: the database failed; retry later"),
}
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: problem("`invalid_json`: the body is not JSON (or `idempotency_key_*`)"),
    413: problem("`payload_too_large`: the body is over 1 MiB"),
    422: problem("`invalid_request`: the body is not valid; `detail` names the field"),
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: problem("`not_found`: absent, or another owner's (never 403)"),
}


IDEMPOTENCY_KEY_PARAMETER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "description": "1–255 printable ASCII characters, no spaces. Missing → 400 "
    "`idempotency_key_missing`; malformed → 400 `idempotency_key_invalid`.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": KEY_PATTERN},
}


def _drop_framework_validation_errors(schema: dict[str, Any]) -> None:
    """Remove FastAPI's automatic 422 ``HTTPValidationError``: our 422 is a problem, and a
    path parameter that is any string cannot fail validation."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            response = operation.get("responses", {}).get("422", {})
            if "HTTPValidationError" in str(response.get("content", {})):
                del operation["responses"]["422"]
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)


def install_openapi(app: FastAPI) -> None:
    """Make ``app.openapi()`` include our component schemas (built once, then cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description,
            routes=app.routes,
        )
        _, defs = models_json_schema(
            [(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}"
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(defs.get("$defs", {}))
        schema["components"]["securitySchemes"] = {
            SECURITY_SCHEME: {
                "type": "http", "scheme": "bearer",
                "description": "`Authorization: Bearer <token>`; tokens map to owners",
            },
        }
        _drop_framework_validation_errors(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
