"""The Anthropic Messages wire format: ``POST {base_url}/v1/messages``.

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01``; ``max_tokens`` is required; the
system prompt is the top-level ``system`` field (a ``system`` role message is a 400). JSON comes
through a forced tool: ``tools: [{name, input_schema}]`` and ``tool_choice: {"type": "tool",
"name": …}``; the answer is the ``tool_use`` block's ``input``. ``stop_reason`` is the finish
reason; the request id is the ``request-id`` header; errors are ``{"type": "error", "error":
{type, message}}`` (529 ``overloaded_error``).
"""

from __future__ import annotations

import json
from typing import Any

from harness.providers.base import ProviderClient, ProviderRequest, Usage, parse_json_object

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicMessagesClient(ProviderClient):
    """A client for ``kind: anthropic-messages``."""

    kind = "anthropic-messages"
    endpoint = "/v1/messages"
    request_id_header = "request-id"

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key.reveal()
        return headers

    def build_request_body(self, req: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "max_tokens": self.cfg.max_output_tokens,
            "temperature": self.cfg.temperature,
            "messages": [{"role": "user", "content": req.user}],
            "tools": [{
                "name": req.schema_name,
                "description": f"Record the answer; its input must match the {req.schema_name} "
                               "schema exactly.",
                "input_schema": req.schema,
            }],
            "tool_choice": {"type": "tool", "name": req.schema_name},
        }
        if req.system:
            body["system"] = req.system
        return body

    def read_reply(self, data: dict[str, Any], req: ProviderRequest) -> dict[str, Any]:
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")
        tool = next((b for b in blocks if b.get("type") == "tool_use"
                     and b.get("name") == req.schema_name), None)
        texts = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if tool is not None:
            value = tool["input"]
            parsed = value if isinstance(value, dict) else None
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            parsed, text = parse_json_object(texts), texts
        stop = data.get("stop_reason")
        usage = data.get("usage") or {}
        return {
            "text": text,
            "parsed": parsed,
            "finish_reason": stop,
            "refusal": (texts or "refused") if stop == "refusal" else None,
            "usage": Usage(usage.get("input_tokens"), usage.get("output_tokens")),
            "model": data.get("model"),
        }

    def read_error(self, data: Any) -> tuple[str | None, str | None]:
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict):
            return None, None
        code = error.get("type")
        return (str(code) if code else None), error.get("message")
