"""API v1's one source of truth: pydantic models that validate every request body and describe
every body and reply, and the OpenAPI document built from them and the service's route table.

A request body is parsed as strict JSON first (:mod:`harness.service.payload`: 400 for what is
not JSON, 422 for what no store can keep), then validated by its model here (:func:`validate`:
422 naming the field). The schemathesis tests hold the description to the behaviour: a body
these schemas reject is refused, and every reply matches them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.json_schema import models_json_schema

from harness.domain.errors import InvalidIntent

if TYPE_CHECKING:
    from harness.service.asgi import Route

PROBLEM_MEDIA_TYPE = "application/problem+json"
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)


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
Event = Annotated[
    DispatchedEvent | TimedOutEvent | FailedEvent | SucceededEvent | CancelledEvent,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def validate(model: type[BaseModel] | TypeAdapter[Any], value: Any, what: str) -> Any:
    """``value`` (parsed JSON) validated by ``model``; 422 :class:`InvalidIntent` naming the
    first field that is wrong."""
    if not isinstance(value, dict):
        raise InvalidIntent(f"the {what} body must be a JSON object")
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_python(value)
        return model.model_validate(value)
    except ValidationError as exc:
        raise InvalidIntent(_describe(exc.errors()[0], tagged=isinstance(model, TypeAdapter)),
                            field=_field(exc.errors()[0], tagged=isinstance(model, TypeAdapter)),
                            ) from None


def _field(error: Any, *, tagged: bool) -> str:
    loc = list(error.get("loc", ()))
    if tagged and error["type"] not in ("union_tag_invalid", "union_tag_not_found"):
        loc = loc[1:]  # the first element names the union member (the event's type)
    return ".".join(str(p) for p in loc) or "type"


def _describe(error: Any, *, tagged: bool) -> str:
    where = _field(error, tagged=tagged)
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return f"field 'type' is required, one of: {', '.join(EVENT_MODELS)}"
    if error["type"] == "missing":
        return f"field '{where}' is required"
    if error["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    return f"field '{where}': {error['msg']}"


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


def responses(by_status: dict[int | str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """An operation's responses keyed by status text, as OpenAPI writes them."""
    return {str(status): response for status, response in by_status.items()}


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


def _path_parameters(path: str) -> list[dict[str, Any]]:
    return [
        {"name": part[1:-1], "in": "path", "required": True,
         "schema": {"type": "string", "title": part[1:-1].replace("_", " ").title()}}
        for part in path.strip("/").split("/") if part.startswith("{")
    ]


def openapi_document(routes: Iterable[Route], *, title: str, version: str,
                     description: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``, with the models above as its components."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not route.doc:
            continue  # not part of the API (the document itself)
        operation = {k: v for k, v in route.doc.items() if k != "parameters"}
        parameters = [*_path_parameters(route.path), *route.doc.get("parameters", ())]
        if parameters:
            operation["parameters"] = parameters
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    _, defs = models_json_schema(
        [(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}"
    )
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                SECURITY_SCHEME: {
                    "type": "http", "scheme": "bearer",
                    "description": "`Authorization: Bearer <token>`; tokens map to owners",
                },
            },
        },
    }
