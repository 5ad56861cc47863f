"""The two wire formats as a provider speaks them: validate a request, write replies and errors.

Used by the fake providers. Validation follows what the real APIs reject (missing key, missing
``anthropic-version`` or ``max_tokens``, a ``system`` role message sent to Anthropic…), with the
same error body shapes and types, so the official SDKs map them to their own exceptions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

CREATED = 1767225600  # 2026-01-01T00:00:00Z: replies are deterministic


class WireError(Exception):
    """A request the provider refuses, as (status, error type, message, param, code)."""

    def __init__(self, status: int, message: str, *, type_: str | None = None,
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = (
            status, message, type_, param, code)


@dataclass(frozen=True, slots=True)
class CallInput:
    """What a provider reads out of a valid request."""

    model: str
    system: str | None
    user: str
    schema: dict[str, Any]
    tool_name: str | None = None


@dataclass(frozen=True, slots=True)
class Content:
    """What the model says: ``json`` (an object), ``text`` (free text) or ``refusal``."""

    kind: str
    value: Any


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


class OpenAIChatWire:
    """``POST /v1/chat/completions`` as OpenAI answers it."""

    kind: ClassVar[str] = "openai-chat"
    path: ClassVar[str] = "/v1/chat/completions"
    request_id_header: ClassVar[str] = "x-request-id"

    def presented_key(self, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") and len(auth) > 7 else None

    def parse(self, headers: dict[str, str], body: bytes, expected_key: str | None) -> CallInput:
        key = self.presented_key(headers)
        if key is None:
            raise WireError(401, "You didn't provide an API key. You need to provide your API key "
                            "in an Authorization header using Bearer auth (i.e. Authorization: "
                            "Bearer YOUR_KEY).", type_="invalid_request_error")
        if expected_key is not None and key != expected_key:
            # Worst case on purpose: the key is echoed in full so that redaction is tested.
            raise WireError(401, f"Incorrect API key provided: {key}.",
                            type_="invalid_request_error", code="invalid_api_key")
        try:
            data = json.loads(body)
        except ValueError:
            raise WireError(400, "We could not parse the JSON body of your request.",
                            type_="invalid_request_error") from None
        if not isinstance(data, dict) or not data.get("model"):
            raise WireError(400, "you must provide a model parameter",
                            type_="invalid_request_error")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise WireError(400, "Missing required parameter: 'messages'.",
                            type_="invalid_request_error", param="messages",
                            code="missing_required_parameter")
        system = next((_text_of(m.get("content")) for m in messages
                       if isinstance(m, dict) and m.get("role") in ("system", "developer")), None)
        user = next((_text_of(m.get("content")) for m in reversed(messages)
                     if isinstance(m, dict) and m.get("role") == "user"), "")
        schema: dict[str, Any] = {}
        fmt = data.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema")
            if not isinstance(spec, dict) or not spec.get("name"):
                raise WireError(400, "Missing required parameter: 'response_format.json_schema"
                                ".name'.", type_="invalid_request_error",
                                param="response_format.json_schema.name",
                                code="missing_required_parameter")
            schema = spec.get("schema") or {}
        return CallInput(model=data["model"], system=system, user=user, schema=schema)

    def reply(self, call: CallInput, content: Content, request_id: str) -> dict[str, Any]:
        refusal = content.value if content.kind == "refusal" else None
        text = content.value
        if refusal:
            text = None
        elif content.kind == "json":
            text = json.dumps(content.value, ensure_ascii=False)
        prompt = _tokens((call.system or "") + call.user)
        completion = _tokens(text or refusal or "")
        return {
            "id": f"chatcmpl-{request_id.removeprefix('req_')}",
            "object": "chat.completion",
            "created": CREATED,
            "model": call.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": refusal,
                            "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
            "system_fingerprint": "fp_fake",
        }

    _STATUS: ClassVar[dict[int, tuple[str, str | None, str]]] = {
        400: ("invalid_request_error", None, "Invalid request."),
        401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
        403: ("invalid_request_error", "unsupported_country_region_territory",
              "Country, region, or territory not supported."),
        404: ("invalid_request_error", "model_not_found", "The model does not exist."),
        429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
        500: ("server_error", None,
              "The server had an error while processing your request. Sorry about that!"),
        503: ("server_error", "service_unavailable",
              "The engine is currently overloaded, please try again later."),
        504: ("server_error", "gateway_timeout", "Gateway timeout."),
    }

    def error(self, err: WireError | int, request_id: str) -> dict[str, Any]:
        if isinstance(err, int):
            type_, code, message = self._STATUS.get(
                err, ("server_error" if err >= 500 else "invalid_request_error", None,
                      f"HTTP {err} from the fake provider."))
            err = WireError(err, message, type_=type_, code=code)
        return {"error": {"message": err.message, "type": err.type or "invalid_request_error",
                          "param": err.param, "code": err.code}}


class AnthropicMessagesWire:
    """``POST /v1/messages`` as Anthropic answers it."""

    kind: ClassVar[str] = "anthropic-messages"
    path: ClassVar[str] = "/v1/messages"
    request_id_header: ClassVar[str] = "request-id"

    def presented_key(self, headers: dict[str, str]) -> str | None:
        # x-api-key is the documented header; recent SDKs send the key as a Bearer token.
        auth = headers.get("authorization", "")
        bearer = auth[7:] if auth.lower().startswith("bearer ") else ""
        return headers.get("x-api-key") or bearer or None

    def parse(self, headers: dict[str, str], body: bytes, expected_key: str | None) -> CallInput:
        key = self.presented_key(headers)
        if key is None:
            raise WireError(401, "x-api-key header is required", type_="authentication_error")
        if expected_key is not None and key != expected_key:
            # Worst case on purpose: the key is echoed in full so that redaction is tested.
            raise WireError(401, f"invalid x-api-key: {key}", type_="authentication_error")
        if not headers.get("anthropic-version"):
            raise WireError(400, "anthropic-version: header is required",
                            type_="invalid_request_error")
        try:
            data = json.loads(body)
        except ValueError:
            raise WireError(400, "There was an issue with your request body: invalid JSON",
                            type_="invalid_request_error") from None
        if not isinstance(data, dict):
            raise WireError(400, "request body must be an object", type_="invalid_request_error")
        for name in ("model", "max_tokens", "messages"):
            if name not in data:
                raise WireError(400, f"{name}: Field required", type_="invalid_request_error")
        messages = data["messages"]
        if not isinstance(messages, list) or not messages:
            raise WireError(400, "messages: at least one message is required",
                            type_="invalid_request_error")
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                raise WireError(400, f"messages.{i}.role: Unexpected role {json.dumps(role)}. "
                                "The Messages API accepts a top-level `system` parameter, not "
                                "\"system\" as an input message role.",
                                type_="invalid_request_error")
        tools = [t for t in data.get("tools") or [] if isinstance(t, dict)]
        choice = data.get("tool_choice") or {}
        tool_name = None
        schema: dict[str, Any] = {}
        if choice.get("type") == "tool":
            tool = next((t for t in tools if t.get("name") == choice.get("name")), None)
            if tool is None:
                raise WireError(400, f"tool_choice.name: Tool '{choice.get('name')}' not found "
                                "in tools", type_="invalid_request_error")
            tool_name, schema = tool["name"], tool.get("input_schema") or {}
        system = data.get("system")
        return CallInput(
            model=data["model"],
            system=_text_of(system) if system else None,
            user=next((_text_of(m.get("content")) for m in reversed(messages)
                       if m.get("role") == "user"), ""),
            schema=schema,
            tool_name=tool_name,
        )

    def reply(self, call: CallInput, content: Content, request_id: str) -> dict[str, Any]:
        suffix = request_id.removeprefix("req_")
        if content.kind == "json" and call.tool_name:
            blocks: list[dict[str, Any]] = [{"type": "tool_use", "id": f"toolu_{suffix}",
                                             "name": call.tool_name, "input": content.value}]
            stop, out = "tool_use", json.dumps(content.value)
        else:
            text = json.dumps(content.value) if content.kind == "json" else content.value
            blocks = [{"type": "text", "text": text}]
            stop, out = ("refusal" if content.kind == "refusal" else "end_turn"), text
        return {
            "id": f"msg_{suffix}",
            "type": "message",
            "role": "assistant",
            "model": call.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens((call.system or "") + call.user),
                      "output_tokens": _tokens(out)},
        }

    _STATUS: ClassVar[dict[int, tuple[str, str]]] = {
        400: ("invalid_request_error", "Invalid request."),
        401: ("authentication_error", "invalid x-api-key"),
        402: ("billing_error", "Your credit balance is too low."),
        403: ("permission_error", "Your API key does not have permission to use the resource."),
        404: ("not_found_error", "The requested resource could not be found."),
        413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        429: ("rate_limit_error", "Number of request tokens has exceeded your rate limit."),
        500: ("api_error", "Internal server error"),
        504: ("timeout_error", "Request timed out"),
        529: ("overloaded_error", "Overloaded"),
    }

    def error(self, err: WireError | int, request_id: str) -> dict[str, Any]:
        if isinstance(err, int):
            type_, message = self._STATUS.get(
                err, ("api_error" if err >= 500 else "invalid_request_error",
                      f"HTTP {err} from the fake provider."))
            err = WireError(err, message, type_=type_)
        return {"type": "error",
                "error": {"type": err.type or "invalid_request_error", "message": err.message},
                "request_id": request_id}


WIRES: dict[str, OpenAIChatWire | AnthropicMessagesWire] = {
    "openai-chat": OpenAIChatWire(),
    "anthropic-messages": AnthropicMessagesWire(),
}
RETRY_AFTER_STATUSES = frozenset({429, 503, 529})
