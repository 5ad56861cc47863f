"""A fake provider's streamed answer: the text as one wire format's server-sent events. Pure."""

from __future__ import annotations

import json
from typing import Any


def sse_events(kind: str, model: str, text: str) -> list[bytes]:
    """The answer ``text`` as the kind's server-sent events, in three pieces of text."""
    third = max(1, len(text) // 3)
    pieces = [text[:third], text[third: 2 * third], text[2 * third:]]
    if kind == "openai-chat":
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {"id": "chatcmpl-fakestream", "object": "chat.completion.chunk",
                    "created": 1767225600, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data)}\n\n".encode()
        return [chunk({"role": "assistant", "content": pieces[0]}),
                *(chunk({"content": p}) for p in pieces[1:]), chunk({}, "stop"),
                b"data: [DONE]\n\n"]

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
    usage = {"input_tokens": 3, "output_tokens": 3}
    return [
        event("message_start", {"message": {
            "id": "msg_fakestream", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        *(event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": p}})
          for p in pieces),
        event("content_block_stop", {"index": 0}),
        event("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": 3}}),
        event("message_stop", {}),
    ]

