"""Which services the precision suite runs, and how (see conftest.Spec).

Conformant services (written from API.md alone) must pass every shipped scenario and the
detection suite; middleware services (real idempotency middlewares from PyPI, jobs only) are
judged by profiles written from their own documentation; refusers must pass nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.precision.conftest import Spec

REFUSER_STATUSES = (401, 403, 404, 500)


def _empty_jobs_db(folder: Path) -> None:
    """A database with an empty jobs table: the refusers' side-effect counter (always 0)."""
    with sqlite3.connect(folder / "empty.db") as db:
        db.execute("CREATE TABLE IF NOT EXISTS jobs (id TEXT)")


CONFORMANT: dict[str, Spec] = {
    "stdlib-sqlite": Spec(
        module="stdlib_sqlite", args=lambda d: ["--db", str(d / "jobs.db")],
        profile="api-md-sql.profile.yaml", replicas=2,
        env=lambda d: {"PRECISION_JOBS_DB": f"sqlite:///{d / 'jobs.db'}"}),
    "asgi-postgres": Spec(
        module="asgi_postgres", args=lambda d: [], profile="api-md-http.profile.yaml",
        replicas=2, postgres=True),
    "django-memory": Spec(
        module="django_memory", args=lambda d: ["--listeners", "2"],
        profile="api-md-http.profile.yaml"),
}


def _middleware(middleware: str, server: str, fault: str, report_ms: int = 100) -> Spec:
    """A FastAPI order handler behind ``middleware`` on ``server``; its profile's fault makes
    the handler raise (the server then closes, ``report_ms`` after its 500) or return a JSON
    500."""
    report = ["--report-ms", str(report_ms)] if fault == "raise" and report_ms else []
    return Spec(module="middleware_service",
                args=lambda d: ["--middleware", middleware, "--server", server, *report],
                profile=f"{middleware}-{fault}.profile.yaml")


# middleware → the server it runs on (each a different stack)
MIDDLEWARE_SERVERS = {"idempotency-key": "uvicorn", "fastapi-idempotency": "uvicorn-h11",
                      "idempotency-header": "hypercorn"}
MIDDLEWARES: dict[str, Spec] = {
    f"{middleware}-{fault}": _middleware(middleware, server, fault)
    for middleware, server in MIDDLEWARE_SERVERS.items() for fault in ("raise", "500")
}

# The handler raises and the server closes at once, on every server stack: the client's next
# request sometimes meets the closed connection (the natural race, not widened).
NATURAL_CLOSE: dict[str, Spec] = {
    f"idempotency-key-raise-on-{server}": _middleware("idempotency-key", server, "raise",
                                                      report_ms=0)
    for server in ("uvicorn", "uvicorn-h11", "hypercorn")
}

REFUSERS: dict[str, Spec] = {
    f"refuses-{status}": Spec(
        module="refuser", args=lambda d, s=status: ["--status", str(s)],
        profile="refuser.profile.yaml", setup=_empty_jobs_db, replicas=2,
        env=lambda d: {"PRECISION_JOBS_DB": f"sqlite:///{d / 'empty.db'}"})
    for status in REFUSER_STATUSES
}



def _node(script: str, profile: str, *options: str) -> Spec:
    """A Node service of ``node/`` (started through ``services/node_service.py``)."""
    return Spec(module="node_service", args=lambda d: ["--script", script, *options],
                profile=profile)


# Idempotency layers in another language (tests/precision/test_node_layers.py): express with
# express-idempotency from npm, and a layer written here in the style of @node-idempotency.
# "-by-header" variants key by the Idempotency-Key header alone (as every such layer ships).
NODE: dict[str, Spec] = {
    "express-idempotency": _node("express_idempotency.js", "express-idempotency.profile.yaml",
                                 "--scope", "owner", "--fault", "500"),
    "express-idempotency-by-header": _node(
        "express_idempotency.js", "express-idempotency.profile.yaml", "--scope", "header"),
    "express-idempotency-raise": _node(
        "express_idempotency.js", "express-idempotency.profile.yaml", "--fault", "raise"),
    "node-layer": _node("layer_service.js", "node-layer.profile.yaml", "--scope", "owner"),
    "node-layer-by-header": _node("layer_service.js", "node-layer.profile.yaml",
                                  "--scope", "header"),
    "node-layer-none": _node("layer_service.js", "node-layer-none.profile.yaml",
                             "--fingerprint", "none"),
}

SPECS: dict[str, Spec] = {**CONFORMANT, **MIDDLEWARES, **NATURAL_CLOSE, **REFUSERS, **NODE}
