"""What a chat request asks, as a short key, on either wire: a drill tells a retry or a re-run
(the same question) from another step of a job (another question) by it."""

from __future__ import annotations

import hashlib
from typing import Any


def prompt_key(body: Any) -> str:
    """What a chat request asks, as a short key: the text of its system prompt and of every
    message, in order, on either wire (OpenAI's system message, Anthropic's ``system``), hashed.
    Two calls with the same key ask the same thing (a retry, a re-run, the fallback of the same
    question); another step of a job asks something else. Empty: no conversation read."""
    if not isinstance(body, dict):
        return ""
    parts = _texts(body.get("system"))
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            parts += _texts(message.get("content"))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16] if parts else ""


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [block["text"] for block in content
                if isinstance(block, dict) and isinstance(block.get("text"), str)]
    return []
