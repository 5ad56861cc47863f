"""A request the provider's wire refuses (no API key: 401; a body without messages: 400) is
recorded as ``refused`` with that status and not billed, whatever the drill scripted for its tag:
nothing was generated, streamed, cut or reset. A real provider bills none of them, and a drill
counting a refused request as a cut stream (billed, partly delivered) would charge the service
for a call that never ran."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness.providers.recording import STREAM_CUT, RecordingFake

TAG = "drill-0123456789ab"


def _call(fake: RecordingFake, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
          ) -> list[dict[str, Any]]:
    """One request through the fake's ASGI app; the messages it sent back."""
    sent: list[dict[str, Any]] = []
    data = json.dumps(body).encode()

    async def receive() -> dict[str, Any]:
        nonlocal data
        if data:
            chunk, data = data, b""
            return {"type": "http.request", "body": chunk, "more_body": False}
        await asyncio.Event().wait()  # the client stays; the fake must not need it to leave
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
             "headers": [(b"content-type", b"application/json"), *headers]}
    asyncio.run(asyncio.wait_for(fake(scope, receive, send), 10))
    return sent


ASK = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Ticket {TAG}."}]}
KEY = [(b"authorization", b"Bearer sk-test")]


@pytest.mark.parametrize(("script", "body", "headers", "status"), [
    (STREAM_CUT, {**ASK, "stream": True}, [], 401),  # no API key
    (STREAM_CUT, {"model": "gpt-4o-mini", "stream": True, "note": TAG}, KEY, 400),
    ("reset-after-send", {"model": "gpt-4o-mini", "note": TAG}, KEY, 400),
    ("truncated", {**ASK}, [], 401),
], ids=["cut-no-key", "cut-no-messages", "reset-no-messages", "truncated-no-key"])
def test_a_request_the_wire_refuses_is_refused_whatever_its_tag_was_scripted(
        script: str, body: dict[str, Any], headers: list[tuple[bytes, bytes]],
        status: int) -> None:
    fake = RecordingFake("openai-chat")
    fake.script_tag(TAG, script)
    sent = _call(fake, body, headers)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == status
    [record] = fake.received()
    assert (record.tag, record.outcome, record.status, record.billed) == \
        (TAG, "refused", status, False)


def test_a_well_formed_request_keeps_its_scripted_outcome() -> None:
    """The control: with the key and the messages, the same scripts cut and answer."""
    fake = RecordingFake("openai-chat")
    fake.script_tag(TAG, "conformant")
    sent = _call(fake, ASK, KEY)
    assert sent[0]["status"] == 200
    [record] = fake.received()
    assert (record.outcome, record.status, record.billed) == ("answered", None, True)
