"""Handler faults: make a service's next request fail, the way its profile says.

The engine injects faults (DESIGN.md); for a service it cannot reach inside, the profile names
how: an endpoint (``{method: POST, path: /_faults/fail-next}``) or a command run without a shell
(``{command: [touch, /tmp/fail-next]}``). The answer is a :class:`Reply`: 2xx (or exit status 0)
when the fault is armed, an error otherwise, so the ``fault`` op in the history says whether the
fault was really injected.
"""

from __future__ import annotations

import subprocess

import httpx

from harness.scenarios.targets.base import Reply
from harness.scenarios.targets.profile_model import Fault

COMMAND_TIMEOUT_S = 30.0


def inject(fault: Fault, http: httpx.Client, base_url: str) -> Reply:
    """Arm ``fault``; 204/200 (or 200 for a command that exited 0) when it is armed."""
    if fault.command is not None:
        try:
            done = subprocess.run(fault.command, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Reply(0, None, detail=f"the fault command did not run: {type(exc).__name__}",
                         never_sent=True)
        if done.returncode != 0:
            return Reply(500, {"code": "fault_command_failed", "status": done.returncode},
                         detail=done.stderr.strip()[:200])
        return Reply(200, {"armed": True})
    assert fault.path is not None
    try:
        response = http.request(fault.method, base_url + fault.path)
    except httpx.TransportError as exc:
        never = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return Reply(0, None, detail=type(exc).__name__, never_sent=never)
    if 200 <= response.status_code < 300:
        return Reply(response.status_code, {"armed": True})
    return Reply(response.status_code, {"code": f"http_{response.status_code}",
                                        "status": response.status_code})
