"""``failover-harness serve``: run the reference HTTP service (API v1) on uvicorn.

The configuration (tokens, store URL) is checked before uvicorn starts, so a bad file or an
unreachable database is exit 2 with a message, not a worker's traceback. With ``--workers N``
uvicorn starts N processes; each builds its app from the environment set here
(:func:`harness.service.app.app_from_env`). Several ``serve`` processes may share one database.
"""

from __future__ import annotations

import argparse
import errno
import os
import socket
from pathlib import Path
from typing import Any

from harness.commands._serving import stopped_by_uvicorn
from harness.domain.errors import ConfigError, StoreError
from harness.providers.secrets import redacting_config
from harness.service import app as service
from harness.service.auth import load_tokens
from harness.service.lifeline import mark_parent
from harness.store import open_store
from harness.store.postgres import _safe

HELP = "Run the reference HTTP service (API v1) over the reference store"
EXITS = {0: "stopped cleanly (Ctrl-C)"}
EXAMPLES = (
    ("serve on 127.0.0.1:8787 with SQLite, tokens from HARNESS_TOKENS", "failover-harness serve"),
    ("four workers on PostgreSQL",
     "failover-harness serve --db postgresql://app@db:5432/jobs --workers 4"),
)

DEFAULT_PORT = 8787


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", default=None, metavar="URL",
        help="store URL: sqlite:///path or postgresql://… (default: sqlite:///harness.db in "
        "the working directory, or $HARNESS_SERVE_DB)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--tokens-file", default=None, metavar="FILE",
        help="YAML {token: owner}; without it, $HARNESS_TOKENS=\"tok1=alice,tok2=bob\"",
    )
    parser.add_argument(
        "--pool-size", type=int, default=10,
        help="PostgreSQL connections per worker process (default 10)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
        help="the server's log level (default: info)",
    )
    parser.add_argument(
        "--no-access-log", dest="access_log", action="store_false",
        help="do not log one line per request",
    )


def _check(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise ConfigError(f"--workers is {args.workers}", field="--workers",
                          fix="pass --workers 1 or more")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port is {args.port}", field="--port",
                          fix="pass a port between 1 and 65535 (0: any free port)")
    if args.pool_size < 1:
        raise ConfigError(f"--pool-size is {args.pool_size}", field="--pool-size",
                          fix="pass --pool-size 1 or more")


def _probe_postgres(url: str) -> None:
    """Fail fast (one connection, no pool retries) when a PostgreSQL server is unreachable."""
    if not url.startswith(("postgresql://", "postgres://")):
        return
    try:
        import psycopg  # optional extra: postgres
    except ImportError:
        return  # open_store says which extra to install

    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {_safe(exc, url)}") from None


def _check_port_free(host: str, port: int) -> None:
    """Exit 2 before uvicorn starts when the address is taken (uvicorn would log it and exit
    with a code that means something else). Bound as uvicorn binds it (SO_REUSEADDR)."""

    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"address {host}:{port} is already in use", field="--port",
                    fix="stop what serves that port (an earlier 'failover-harness serve'?), "
                    "or pass another --port",
                ) from None
            raise ConfigError(f"cannot bind {host}:{port}: {exc.strerror}", field="--host",
                              fix="pass an address of this machine with --host") from None


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging setup, plus our ``harness`` logger on the same handler."""
    from uvicorn.config import LOGGING_CONFIG  # optional extra: serve


    config = redacting_config(LOGGING_CONFIG)  # every handler redacts registered secrets
    config["loggers"]["harness"] = {
        "handlers": ["default"], "level": level.upper(), "propagate": False,
    }
    return config


def run(args: argparse.Namespace) -> int:
    import uvicorn  # optional extra: serve


    _check(args)
    tokens = load_tokens(args.tokens_file, os.environ)
    _check_port_free(args.host, args.port)
    url = args.db or os.environ.get(service.ENV_DB) or service.DEFAULT_DB
    options: dict[str, Any] = {}
    if url.startswith(("postgresql://", "postgres://")):
        options["pool_size"] = args.pool_size
    try:
        _probe_postgres(url)
        store = open_store(url, **options)
    except StoreError as exc:
        raise ConfigError(
            f"cannot open the store: {exc.message}", field="--db",
            fix="check that the database is running and the URL is right",
        ) from None

    # What each worker process reads (uvicorn --workers spawns fresh interpreters).
    os.environ[service.ENV_DB] = url
    os.environ[service.ENV_POOL_SIZE] = str(args.pool_size)
    if args.tokens_file:
        os.environ[service.ENV_TOKENS_FILE] = str(Path(args.tokens_file).resolve())

    common: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_config": log_config(args.log_level),
        "log_level": args.log_level,
        "access_log": args.access_log,
        "timeout_graceful_shutdown": 5,
        "server_header": False,
    }
    mark_parent()  # the workers die with this process, even when it is killed outright
    with stopped_by_uvicorn():  # Ctrl-C and SIGTERM: a graceful stop, exit 0
        if args.workers == 1:
            uvicorn.run(service.create_app(store, tokens, owns_store=True), **common)
        else:
            store.close()
            uvicorn.run(
                "harness.service.app:app_from_env", factory=True, workers=args.workers, **common
            )
    return 0
