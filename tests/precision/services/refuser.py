"""A service that refuses every request with one status (401, 403, 404, 500…): a wrong token in
CI, a wrong base path, a service that is down behind its proxy. The harness must never say such
a service keeps a promise: nothing it answered shows anything.

Every method on every path (health, counters and fault hooks included) gets the same problem
details answer, on an HTTP/1.1 keep-alive connection.

Run: ``python -m tests.precision.services.refuser --status 401 [--port 0]``.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.precision.services.common import announce, service_args

CODES = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 500: "internal"}


class Refuser(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    status = 401

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        code = CODES.get(self.status, f"http_{self.status}")
        data = json.dumps({"type": "about:blank", "title": code, "status": self.status,
                           "detail": "refused", "code": code}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/problem+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _refuse


def main() -> None:
    parser = service_args(__doc__.splitlines()[0])
    parser.add_argument("--status", type=int, required=True)
    args = parser.parse_args()
    handler = type("Refuser", (Refuser,), {"status": args.status})
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True
    announce(f"http://{args.host}:{server.server_address[1]}")
    server.serve_forever()


if __name__ == "__main__":
    main()
