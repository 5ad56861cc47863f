"""Wait until a service answers its health check (HTTP 200), or give up: a CI step.

    python examples/ci/wait_healthy.py http://127.0.0.1:8801/healthz --timeout 60

Polls every 0.2 s; exit 0 once healthy, 1 when the deadline passes (printing the last error).
Standard library only, so it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S")
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(args.url, timeout=2) as response:
                if response.status == 200:
                    print(f"healthy: {args.url}")
                    return 0
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.2)  # a readiness poll: the service starts in its own time
    print(f"not healthy after {args.timeout:g} s: {args.url} ({last})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
