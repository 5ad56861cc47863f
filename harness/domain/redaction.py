"""Redaction: the registry of secret values, and where a database DSN keeps its password.

Pure text, no I/O, so every layer may use it (the PostgreSQL store for its DSN, the providers
for API keys). The public front is :mod:`harness.providers.secrets`, which re-exports these.

A value is registered once (an API key read from the environment, a DSN's password when a store
opens) and :func:`redact` removes it from any text from then on: exception messages, log lines
(``RedactingFilter``), reports, cassettes, printed commands.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from urllib.parse import unquote

REDACTED = "[REDACTED]"

_lock = threading.Lock()
_known: set[str] = set()
# Values shorter than this are not registered: replacing "a" everywhere would garble output.
_MIN_SECRET_LEN = 6

# A URL's userinfo password (postgresql://user:PASSWORD@host) and a password query parameter
# (?password=…, &sslpassword=…); a key=value DSN's password (password=x, password = 'a b\'c').
URL_PASSWORD = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:]*:(?P<pw>[^/?#@]*)@")
QUERY_PASSWORD = re.compile(r"[?&](?:ssl)?password=(?P<pw>[^&#]*)", re.IGNORECASE)
KV_PASSWORD = re.compile(
    r"(?:^|\s)(?:ssl)?password\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s']+))",
    re.IGNORECASE,
)
_DSN_PATTERNS = (URL_PASSWORD, QUERY_PASSWORD, KV_PASSWORD)


def register_secret(value: str) -> None:
    """Remember ``value`` so :func:`redact` removes it from every text from now on."""
    if isinstance(value, str) and len(value) >= _MIN_SECRET_LEN:
        with _lock:
            _known.add(value)


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


def dsn_secrets(dsn: str) -> list[str]:
    """The password(s) a database DSN carries, URL form or key=value form, as written and
    decoded (URL escapes, quoted-string escapes): for :func:`redact`'s ``extra``."""
    if not isinstance(dsn, str):
        return []
    found: list[str] = []
    for pattern in (URL_PASSWORD, QUERY_PASSWORD):
        for match in pattern.finditer(dsn):
            found += [match.group("pw"), unquote(match.group("pw"))]
    for match in KV_PASSWORD.finditer(dsn):
        quoted = match.group("quoted")
        if quoted is not None:
            found += [quoted, re.sub(r"\\(.)", r"\1", quoted)]
        else:
            found.append(match.group("bare"))
    return [value for value in dict.fromkeys(found) if value]


def register_dsn(dsn: str) -> None:
    """Register the DSN's password(s), so that no later text (a driver's log line) shows them."""
    for value in dsn_secrets(dsn):
        register_secret(value)


def mask_passwords(text: str, replacement: str = REDACTED,
                   patterns: Iterable[re.Pattern[str]] = _DSN_PATTERNS, *,
                   keep_quotes: bool = True) -> str:
    """``text`` with each password the DSN ``patterns`` find replaced by ``replacement`` (a
    quoted key=value password keeps its quotes unless ``keep_quotes`` is false)."""

    def mask(match: re.Match[str]) -> str:
        group = next(g for g in ("pw", "quoted", "bare")
                     if g in match.re.groupindex and match.group(g) is not None)
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        if group == "quoted" and not keep_quotes:
            start, end = start - 1, end + 1
        return match.group(0)[:start] + replacement + match.group(0)[end:]

    for pattern in patterns:
        text = pattern.sub(mask, text)
    return text


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password(s) replaced by ``[REDACTED]`` (URL or key=value form), and any
    registered secret removed: safe to print, log, or put in a report or a command line."""
    if not isinstance(dsn, str):
        dsn = str(dsn)
    return redact(mask_passwords(dsn))
