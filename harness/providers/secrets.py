"""API keys: read only from the environment, held in :class:`Secret`, redacted from all output.

Every key the harness reads goes through :func:`secret_from_env`, which registers the value so
that :func:`redact` can remove it from any text (exception messages, logs, reports, recorded
deliveries). :class:`RedactingFilter` applies the same to log records. A ``Secret`` never shows
its value in ``repr``/``str``; only :meth:`Secret.reveal` returns it, at the one place that
builds the request header.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

# Headers that carry credentials in the two wire formats (and common gateways).
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})

_lock = threading.Lock()
_known: set[str] = set()
# Values shorter than this are not registered: replacing "a" everywhere would garble output.
_MIN_SECRET_LEN = 6


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


def register_secret(value: str) -> None:
    """Remember ``value`` so :func:`redact` removes it from every text from now on."""
    if isinstance(value, str) and len(value) >= _MIN_SECRET_LEN:
        with _lock:
            _known.add(value)


def secret_from_env(env: Mapping[str, str], name: str) -> Secret | None:
    """The key in environment variable ``name`` as a :class:`Secret`, or None if it is unset."""
    value = env.get(name)
    if value is None or value == "":
        return None
    return Secret(value, source=name)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered secret (and each of ``extra``) replaced by ``[REDACTED]``."""
    if not isinstance(text, str):
        text = str(text)
    with _lock:
        values = sorted(_known.union(v for v in extra if v), key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


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
    """A logging filter that redacts registered secrets from the message and its arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is the logger's problem, not a leak
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> RedactingFilter:
    """Attach a :class:`RedactingFilter` to ``logger``'s handlers (root logger by default)."""
    target = logger or logging.getLogger()
    flt = RedactingFilter()
    target.addFilter(flt)
    for handler in target.handlers:
        handler.addFilter(flt)
    return flt
