"""Side-effect counters: read how many side effects a service has made, directly.

"One click, one side effect" is then checked as such rather than inferred from job ids: a
profile names an HTTP endpoint answering a number, or a SQL query against the service's own
database (SQLite or PostgreSQL). The runner reads the counter before and after a run and writes
both readings into the history (``side_effects`` ops), where a checker compares the difference
with the number of distinct clicks. A counter answers a number, or raises
:class:`CounterError` saying why it could not (never the database password).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from harness.domain.errors import ConfigError
from harness.providers.secrets import redact_dsn
from harness.scenarios.targets.faults import fill_headers
from harness.scenarios.targets.preflight import everything_404, wrong_base_url
from harness.target.bounded import json_body
from harness.target.model import HttpCounter, SqlCounter
from harness.target.values import pick


class CounterError(ConfigError):
    """The side-effect counter could not be read (exit 2: the profile or the service is wrong)."""

    def __init__(self, message: str, *, fix: str | None = None, file: str | None = None,
                 line: int | None = None, field: str = "side_effects") -> None:
        super().__init__(message, file=file, line=line, field=field, fix=fix or (
            "make the counter answer a number (see side_effects in docs/scenarios.md), or remove "
            "side_effects from the profile"))


class CounterUnsettled(Exception):
    """The counter could not be read at this moment (the service was still working): the run's
    side-effect promise is unknown, with this reason."""


class Counter(Protocol):
    """Reads the number of side effects so far."""
    def count(self) -> int: ...


def _number(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise CounterError(f"{where} answered {value!r}, not a number")
    try:
        number = float(value)
    except ValueError:
        raise CounterError(f"{where} answered {value!r}, not a number") from None
    if not number.is_integer() or number < 0:
        raise CounterError(f"{where} answered {value!r}, not a count")
    return int(number)


class HttpSideEffects:
    """``GET /stats`` (or the profile's method and path) → the number at ``field``."""

    def __init__(self, spec: HttpCounter, http: httpx.Client, base_url: str) -> None:
        self.spec = spec
        self.http = http
        self.base_url = base_url
        self.url = base_url + spec.path

    def count(self) -> int:
        where = f"{self.spec.method} {self.spec.path}"
        try:
            response = self.http.request(self.spec.method, self.url,
                                         headers=fill_headers(self.spec.headers))
        except httpx.TransportError as exc:
            raise CounterError(f"{where}: no answer ({type(exc).__name__})") from None
        if response.status_code == 404 and everything_404(self.http, self.base_url, ()):
            raise wrong_base_url(self.base_url, f"{where} answered 404")
        if response.status_code != 200:
            raise CounterError(f"{where} answered {response.status_code}")
        try:
            body = json_body(response)
        except ValueError:
            body = response.text.strip()
        value = pick(body, self.spec.field) if self.spec.field else body
        return _number(value, where + (f" field {self.spec.field}" if self.spec.field else ""))


class SqlSideEffects:
    """A one-number query against SQLite (``sqlite:///file``) or PostgreSQL."""

    def __init__(self, spec: SqlCounter, env: Mapping[str, str]) -> None:
        self.query = spec.query
        if spec.url_env is not None:
            url = env.get(spec.url_env)
            if not url:
                file, line = spec._asked_at or (None, None)  # the profile line that asks
                raise CounterError(
                    f"environment variable {spec.url_env} is not set (the side-effect counter "
                    "reads the service's database from it)", file=file, line=line,
                    field="side_effects.sql.url_env",
                    fix=f"export {spec.url_env}=sqlite:///path/to/service.db (or postgresql://…)")
            self.url = url
        else:
            assert spec.url is not None
            self.url = spec.url

    def count(self) -> int:
        where = f"{self.query!r} on {redact_dsn(self.url)}"
        try:
            if self.url.startswith("sqlite:///"):
                path = self.url[len("sqlite:///"):]
                with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
                    row = db.execute(self.query).fetchone()
            else:
                import psycopg  # optional extra: postgres

                with psycopg.connect(self.url, connect_timeout=10) as db:
                    db.read_only = True  # a counter only reads: BEGIN READ ONLY
                    row = db.execute(self.query).fetchone()
        except CounterError:
            raise
        except Exception as exc:
            # the driver's message may repeat the URL: name only the kind of failure
            raise CounterError(f"{where} failed: {type(exc).__name__}") from None
        if row is None or len(row) != 1:
            raise CounterError(f"{where} must return one row with one number")
        return _number(row[0], where)


def open_counter(
    http_spec: HttpCounter | None,
    sql_spec: SqlCounter | None,
    *,
    http: httpx.Client,
    base_url: str,
    env: Mapping[str, str] | None = None,
) -> Counter:
    """The counter a profile's ``side_effects`` describes."""
    if http_spec is not None:
        return HttpSideEffects(http_spec, http, base_url)
    assert sql_spec is not None
    return SqlSideEffects(sql_spec, os.environ if env is None else env)
