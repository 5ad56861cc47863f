"""The OpenAI Chat Completions wire format: ``POST {base_url}/chat/completions``.

Structured output through ``response_format: {"type": "json_schema", "json_schema": {"name",
"schema", "strict": true}}``; the system prompt is a ``{"role": "system"}`` message. The reply is
``choices[0].message`` (``content``, ``refusal``), ``finish_reason`` and ``usage``; the request
id is the ``x-request-id`` header; errors are ``{"error": {message, type, param, code}}``.
"""

from __future__ import annotations

from typing import Any

from harness.providers.base import ProviderClient, ProviderRequest, Usage, parse_json_object


class OpenAIChatClient(ProviderClient):
    """A client for ``kind: openai-chat`` (OpenAI and OpenAI-compatible endpoints)."""

    kind = "openai-chat"
    endpoint = "/chat/completions"
    request_id_header = "x-request-id"

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key.reveal()}"} if self._api_key else {}

    def build_request_body(self, req: ProviderRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": req.system}] if req.system else []
        messages.append({"role": "user", "content": req.user})
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_completion_tokens": self.cfg.max_output_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": req.schema_name, "schema": req.schema, "strict": True},
            },
        }
        if req.seed is not None:
            body["seed"] = req.seed
        return body

    def read_reply(self, data: dict[str, Any], req: ProviderRequest) -> dict[str, Any]:
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("message.content is not a string")
        usage = data.get("usage") or {}
        return {
            "text": content or "",
            "parsed": parse_json_object(content),
            "finish_reason": choice.get("finish_reason"),
            "refusal": message.get("refusal"),
            "usage": Usage(usage.get("prompt_tokens"), usage.get("completion_tokens")),
            "model": data.get("model"),
        }

    def read_error(self, data: Any) -> tuple[str | None, str | None]:
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict):
            return None, None
        code = error.get("code") or error.get("type")
        return (str(code) if code else None), error.get("message")
