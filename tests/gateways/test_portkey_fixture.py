"""The Portkey fixture runs the real gateway on loopback, in front of a recording fake."""

from __future__ import annotations

import json
import socket

import httpx

from harness.providers.fake_server import FakeServer
from harness.providers.recording import RecordingFake
from tests.gateways.portkey_gateway import PortkeyGateway


def test_portkey_routes_by_its_config_header_and_stays_on_loopback(
        portkey: PortkeyGateway) -> None:
    upstream = RecordingFake("openai-chat")
    fake = FakeServer(upstream)
    fake.start()
    try:
        config = {"provider": "openai", "custom_host": f"{fake.url}/v1", "api_key": "sk-test"}
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        url = f"{portkey.url}/chat/completions"
        refused = httpx.post(url, json=body, timeout=30)
        answered = httpx.post(url, json=body, timeout=30,
                              headers={"x-portkey-config": json.dumps(config)})
    finally:
        fake.stop()
    assert refused.status_code == 400, refused.text
    assert "x-portkey-config" in refused.text
    assert answered.status_code == 200, answered.text
    assert len(upstream.received()) == 1
    # bound to 127.0.0.1 only: another local address of this host is refused
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        assert sock.connect_ex(("127.0.0.2", portkey.port)) != 0
