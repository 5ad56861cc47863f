"""Redaction: the registry of secret values, and where a database DSN keeps its password.

Pure text, no I/O, so every layer may use it (the PostgreSQL store for its DSN, the providers
for API keys). The public front is :mod:`harness.providers.secrets`, which re-exports these.

A value is registered once (an API key read from the environment, a DSN's password when a store
opens) and :func:`redact` removes it from any text from then on: exception messages, log lines
(``RedactingFilter``), reports, cassettes, printed commands.

Two kinds of redaction, on purpose:

- *where it stands*: :func:`mask_passwords` / :func:`redact_dsn` replace the password of a DSN
  in its place (``scheme://user:PASSWORD@``, ``?password=``, ``password=…``), whatever it is;
- *free text*: :func:`redact` replaces registered values as **whole tokens** only (not inside
  a longer word), and a DSN's password that is also its scheme, user, host or database name
  (``postgresql://postgres:postgres@…``) is never registered for free text: scrubbing it
  everywhere would print ``[REDACTED]ql://[REDACTED]@…`` and hide nothing.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

REDACTED = "[REDACTED]"

_lock = threading.Lock()
_known: set[str] = set()
# Values shorter than this are not registered: replacing "a" everywhere would garble output.
_MIN_SECRET_LEN = 6

# A URL's userinfo password (postgresql://user:PASSWORD@host) and a password query parameter
# (?password=…, &sslpassword=…); a key=value DSN's password (password=x, password = 'a b\'c').
URL_PASSWORD = re.compile(
    r"(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:\s]*:(?P<pw>[^/?#@\s]*)@")
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


# A token boundary: a secret is replaced where no letter or digit continues it on either side.
_EDGE_BEFORE, _EDGE_AFTER = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
_compiled: dict[frozenset[str], re.Pattern[str]] = {}


def _pattern(values: frozenset[str]) -> re.Pattern[str]:
    pattern = _compiled.get(values)
    if pattern is None:
        alternatives = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
        pattern = re.compile(f"{_EDGE_BEFORE}(?:{alternatives}){_EDGE_AFTER}")
        if len(_compiled) > 64:
            _compiled.clear()
        _compiled[values] = pattern
    return pattern


def _forms(values: frozenset[str]) -> frozenset[str]:
    """Each secret as it stands in text and as it stands inside a JSON string (escaped), so a
    secret with a quote, a backslash or a non-ASCII letter is found in a JSON file too."""
    forms = _forms_of.get(values)
    if forms is None:
        forms = frozenset(f for v in values for f in (
            v, json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1]))
        if len(_forms_of) > 64:
            _forms_of.clear()
        _forms_of[values] = forms
    return forms


_forms_of: dict[frozenset[str], frozenset[str]] = {}


def longest_secret() -> int:
    """The length of the longest registered secret as it may stand in text (JSON-escaped
    forms included); 0 when none is registered."""
    with _lock:
        values = frozenset(_known)
    return max((len(form) for form in _forms(values)), default=0) if values else 0


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered secret (and each of ``extra``) replaced by ``[REDACTED]``
    where it stands as a whole token (not inside a longer word: ``postgres`` is not scrubbed
    from ``postgresql``), as written or JSON-escaped."""
    if not isinstance(text, str):
        text = str(text)
    with _lock:
        values = frozenset(_known.union(v for v in extra if v))
    if not values:
        return text
    forms = _forms(values)
    if not any(v in text for v in forms):
        return text
    return _pattern(forms).sub(REDACTED, text)


def redact_data(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with every string, keys
    included, redacted: for a file written from data (drill.json, a run's results)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_data(k): redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


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


_URL_PARTS = re.compile(
    r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://(?:(?P<user>[^/?#@:\s]*)(?::[^/?#@\s]*)?@)?"
    r"(?P<host>[^/?#:\s]*)(?::\d*)?(?:/(?P<db>[^?#\s]*))?")
_KV_PART = re.compile(r"(?:^|\s)(?P<key>user|host|hostaddr|dbname)\s*=\s*'?(?P<value>[^\s']*)",
                      re.IGNORECASE)


def dsn_names(dsn: str) -> set[str]:
    """The words a DSN shows besides its password: scheme, user, host, database name."""
    names: set[str] = set()
    for match in _URL_PARTS.finditer(dsn):
        names.update(unquote(v) for v in match.groupdict().values() if v)
    names.update(m.group("value") for m in _KV_PART.finditer(dsn) if m.group("value"))
    return names


def text_secrets(dsn: str) -> list[str]:
    """The DSN's password(s) that may be scrubbed from free text: not one that is also the
    DSN's scheme, user, host or database name (that one is masked only where it stands)."""
    if not isinstance(dsn, str):
        return []
    names = dsn_names(dsn)
    return [v for v in dsn_secrets(dsn) if v not in names and not any(v in n for n in names)]


def redact_about(text: str, dsn: str) -> str:
    """``text`` (a driver's message about ``dsn``) with the DSN's password removed: masked
    where a DSN in it shows one, scrubbed as a whole token elsewhere."""
    return redact(mask_passwords(text), extra=text_secrets(dsn))


def register_dsn(dsn: str) -> None:
    """Register the DSN's password(s), so that no later text (a driver's log line) shows them
    — except a password that is also the DSN's scheme, user, host or database name: that word
    is masked where it stands as the password (:func:`redact_dsn`), never scrubbed from text."""
    for value in text_secrets(dsn):
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


_URL_USER_PASSWORD = re.compile(r"(://[^:/@\s]+:)([^@\s]+)(@)")


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: a URL's (``scheme://user:pw@``, also
    inside ``mutant:name@postgresql://…``), a ``?password=`` parameter, a key=value DSN's
    (``host=db password=pw``), and any secret registered with :mod:`harness.domain.redaction`."""
    text = _URL_USER_PASSWORD.sub(r"\1***\3", url)
    text = mask_passwords(text, "***", (QUERY_PASSWORD, KV_PASSWORD), keep_quotes=False)
    return redact(text)


# scheme://user:password@host → scheme://user@host (the user stays: it says who connects)
# (bounded repetitions: a megabyte of foreign text must not make these quadratic)
_CREDENTIALS = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^:/@\s]{0,256}):[^@\s/]{0,1024}@")
# password=… in a key=value DSN (quoted or not)
_DSN_PASSWORD = re.compile(r"(?i)\s*\bpassword\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S+)")


def without_credentials(text: str) -> str:
    """``text`` with URL passwords and ``password=`` DSN fields removed."""
    if "://" in text:
        text = _CREDENTIALS.sub(lambda m: m.group("head") + "@", text)
    if "password" in text.lower():
        text = _DSN_PASSWORD.sub("", text)
    return text


def register_target_secrets(text: str | None) -> None:
    """Register every password a target holds (a DSN, ``mutant:<name>@<dsn>``, replica URLs),
    with :func:`register_dsn`, so it is redacted wherever it shows."""
    if not text:
        return
    pieces = [text, *text.split(",")]
    if text.startswith("mutant:") and "@" in text:
        pieces.append(text.split("@", 1)[1])
    for piece in pieces:
        register_dsn(piece.strip())
