"""Handler faults: make a service's next request fail, the way its profile says.

The engine injects faults (DESIGN.md); for a service it cannot reach inside, the profile names
how, as one or more named faults (``raise``, ``return-500``…; a scenario step names the one it
wants, ``fault: handler_error`` takes the default): an endpoint
(``{method: POST, path: /_faults/fail-next, headers: {Idempotency-Key: "{fresh_key}"}}``) or a
command run without a shell (``{command: [touch, /tmp/fail-next]}``; ``{target}`` is the base
URL). The answer is a :class:`Reply`: 2xx (or exit status 0) when the fault is armed, an error
otherwise, so the ``fault`` op in the history says whether the fault was really injected.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Mapping
from typing import Any

import httpx

from harness.scenarios.targets.base import Reply
from harness.target.model import FaultTrigger

COMMAND_TIMEOUT_S = 30.0


def fresh_key() -> str:
    """A new idempotency key, for an endpoint that wants one on every request."""
    return f"harness-{secrets.token_hex(8)}"


def fill(text: str, values: Mapping[str, str]) -> str:
    """``{fresh_key}`` (a new key each time it is filled), ``{target}``… in ``text``; other
    braces are left as written."""
    out = text
    for name, value in values.items():
        out = out.replace("{" + name + "}", value)
    if "{fresh_key}" in out:
        out = out.replace("{fresh_key}", fresh_key())
    return out


def fill_headers(headers: Mapping[str, str], **values: str) -> dict[str, str]:
    return {name: fill(value, values) for name, value in headers.items()}


def _body(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        return fill(body, {}).encode("utf-8")
    return json.dumps(body).encode("utf-8")


def inject(fault: FaultTrigger, http: httpx.Client, base_url: str) -> Reply:
    """Arm ``fault``; 204/200 (or 200 for a command that exited 0) when it is armed."""
    if fault.command is not None:
        argv = [fill(arg, {"target": base_url}) for arg in fault.command]
        try:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Reply(0, None, detail=f"the fault command did not run: {type(exc).__name__}",
                         never_sent=True)
        if done.returncode != 0:
            return Reply(500, {"code": "fault_command_failed", "status": done.returncode},
                         detail=done.stderr.strip()[:200])
        return Reply(200, {"armed": True})
    assert fault.path is not None
    headers = fill_headers(fault.headers, target=base_url)
    content = _body(fault.body)
    if content is not None and not isinstance(fault.body, str):
        headers.setdefault("Content-Type", "application/json")
    try:
        response = http.request(fault.method, base_url + fault.path, headers=headers,
                                content=content)
    except httpx.TransportError as exc:
        never = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return Reply(0, None, detail=type(exc).__name__, never_sent=never)
    if 200 <= response.status_code < 300:
        return Reply(response.status_code, {"armed": True})
    return Reply(response.status_code, {"code": f"http_{response.status_code}",
                                        "status": response.status_code})
