"""RecordingFake on a loopback socket: what it records, how each request ends, streams."""

from __future__ import annotations

import httpx
import pytest

from harness.providers.fake_server import FakeServer
from harness.providers.recording import RecordingFake

BODY = {"model": "m", "messages": [{"role": "user", "content": "drill-0123456789ab: hi"}]}
AUTH = {"Authorization": "Bearer not-a-secret", "Idempotency-Key": "k1"}


@pytest.fixture
def fake() -> RecordingFake:
    return RecordingFake("openai-chat", name="p")


def test_outcomes_and_billing(fake: RecordingFake) -> None:
    with FakeServer(fake) as server, httpx.Client(base_url=f"{server.url}/v1") as client:
        assert client.post("/chat/completions", json=BODY, headers=AUTH).status_code == 200
        fake.set_behaviour("status:429")
        assert client.post("/chat/completions", json=BODY, headers=AUTH).status_code == 429
        fake.set_behaviour("slow:3000")  # the caller gives up first: generated, not delivered
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json=BODY, headers=AUTH, timeout=0.3)
        fake.set_behaviour("hang")
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json=BODY, headers=AUTH, timeout=0.3)
        fake.set_behaviour("reset-after-send")
        with pytest.raises(httpx.TransportError):
            client.post("/chat/completions", json=BODY, headers=AUTH)
        assert fake.wait_settled(10)
        records = fake.received()
        remote = client.get(f"{server.url}/_fake/received").json()
    assert [r.outcome for r in records] == ["answered", "refused", "late", "abandoned", "reset"]
    assert [r.billed for r in records] == [True, False, True, True, True]
    assert {r.tag for r in records} == {"drill-0123456789ab"}
    assert records[0].headers["idempotency-key"] == "k1"
    assert "not-a-secret" not in str(remote) and len(remote) == 5


def test_streams_whole_or_cut(fake: RecordingFake) -> None:
    body = {**BODY, "stream": True}
    with FakeServer(fake) as server, httpx.Client(base_url=f"{server.url}/v1") as client:
        with client.stream("POST", "/chat/completions", json=body, headers=AUTH) as response:
            whole = "".join(response.iter_text())
        fake.set_behaviour("stream-cut")
        with pytest.raises(httpx.TransportError), client.stream(
            "POST", "/chat/completions", json=body, headers=AUTH
        ) as response:
            "".join(response.iter_text())
        assert fake.wait_settled(10)
    assert whole.count("data: ") == 5 and whole.endswith("data: [DONE]\n\n")
    assert [(r.stream, r.outcome) for r in fake.received()] == [(True, "answered"), (True, "cut")]
