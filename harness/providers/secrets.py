"""Secrets: API keys held in :class:`Secret`, DSN passwords, and their redaction from all output.

Every key the harness reads goes through :func:`secret_from_env`, which registers the value so
that :func:`redact` can remove it from any text (exception messages, logs, reports, recorded
deliveries); a PostgreSQL store registers its DSN's password the same way (:func:`register_dsn`),
and :func:`redact_dsn` masks a DSN's password, URL or key=value form, before a DSN is shown.
:class:`RedactingFilter` applies the same to log records; the CLI installs it before any command
runs (:func:`install_log_redaction`), and ``serve`` puts it on every uvicorn handler
(:func:`redacting_config`). A ``Secret`` never shows its value in ``repr``/``str``; only
:meth:`Secret.reveal` returns it, at the one place that builds the request header.
(The registry and the DSN parsing live in :mod:`harness.domain.redaction`, pure, so the store
can use them too.)
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from harness.domain.redaction import (
    REDACTED,
    dsn_secrets,
    redact,
    redact_data,
    redact_dsn,
    register_dsn,
    register_secret,
)

__all__ = [
    "REDACTED", "SECRET_HEADERS", "RedactingFilter", "Secret", "dsn_secrets",
    "install_log_redaction", "redact", "redact_data", "redact_dsn", "redact_headers",
    "redact_value", "redacting_config", "register_dsn", "register_secret", "secret_from_env",
]

# Headers that carry credentials in the two wire formats (and common gateways).
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


class Secret:
    """A credential whose value never appears in ``repr``, ``str`` or f-strings."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, *, source: str = "") -> None:
        self._value = value
        self.source = source
        register_secret(value)

    def reveal(self) -> str:
        """The value: call only where the request header is built."""
        return self._value

    def __repr__(self) -> str:
        where = f" from ${self.source}" if self.source else ""
        return f"Secret({REDACTED}{where})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:  # never pickled into a file or a subprocess by accident
        raise TypeError("a Secret cannot be pickled")


def secret_from_env(env: Mapping[str, str], name: str) -> Secret | None:
    """The key in environment variable ``name`` as a :class:`Secret`, or None if it is unset."""
    value = env.get(name)
    if value is None or value == "":
        return None
    return Secret(value, source=name)


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (for reports and recordings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def redact_headers(headers: Iterable[tuple[str, str]] | Mapping[str, str]) -> dict[str, str]:
    """Headers with credential headers masked and every registered secret redacted."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, str] = {}
    for name, value in items:
        lower = name.lower()
        out[lower] = REDACTED if lower in SECRET_HEADERS else redact(value)
    return out


class RedactingFilter(logging.Filter):
    """A logging filter that redacts registered secrets from the message, its arguments and
    the traceback of an exception it carries.

    ``args`` are redacted one by one and never dropped: a formatter may read them itself
    (uvicorn's access formatter unpacks ``(client, method, path, version, status)``). Only
    when the formatted message would still show a secret (one that spans the format string
    and an argument) is the message replaced by its redacted, formatted text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.getMessage()
        except Exception:  # a bad format string is the logger's problem, not a leak
            return True
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, Mapping):
            record.args = {k: _redact_arg(v) for k, v in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_redact_arg(v) for v in record.args)
        try:
            message = record.getMessage()
        except Exception:  # a redacted argument no longer fits its %-format: show the text
            message = redact(f"{record.msg} {record.args!r}")
            record.msg, record.args = message, ()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def _redact_arg(value: Any) -> Any:
    """A log argument with secrets redacted: strings redacted, other values kept as they are
    unless their text shows a secret (then that text, redacted)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    text = str(value)
    cleaned = redact(text)
    return value if cleaned == text else cleaned


def install_log_redaction(logger: logging.Logger | None = None) -> RedactingFilter:
    """Attach a :class:`RedactingFilter` to ``logger`` and its handlers (idempotent).

    The default, the root logger, also covers Python's last-resort handler (what prints a
    warning when no handler is configured). A logger's own filters see only its own records,
    so handlers are where redaction holds; handlers added later need :func:`redacting_config`
    or another call. The CLI calls this before any command runs.
    """
    target = logger or logging.getLogger()
    found = [f for f in target.filters if isinstance(f, RedactingFilter)]
    flt = found[0] if found else RedactingFilter()
    places: list[logging.Filterer] = [target, *target.handlers]
    if logger is None and logging.lastResort is not None:
        places.append(logging.lastResort)
    for place in places:
        if not any(isinstance(f, RedactingFilter) for f in place.filters):
            place.addFilter(flt)
    return flt


def redacting_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a ``logging.config.dictConfig`` dict with a :class:`RedactingFilter` on every
    handler (``serve`` passes uvicorn's this way, so its access and error logs are covered)."""
    out = copy.deepcopy(dict(config))
    out.setdefault("filters", {})["redact_secrets"] = {"()": RedactingFilter}
    for handler in out.get("handlers", {}).values():
        names = list(handler.get("filters", []))
        if "redact_secrets" not in names:
            handler["filters"] = [*names, "redact_secrets"]
    return out
