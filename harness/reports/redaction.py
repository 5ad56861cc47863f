"""No secret — and no raw escape — reaches a report or a printed line: every event is scrubbed
before any handler sees it, and every rendering scrubs what it is given.

Two kinds of secret: values the run registered with :mod:`harness.providers.secrets` (API keys,
bearer tokens, DSN passwords: :func:`register_target_secrets` registers the ones a target URL or
DSN carries), replaced by ``[REDACTED]``; and credentials inside a URL or a ``key=value`` DSN,
*removed* (:func:`without_credentials`, in :mod:`harness.domain.redaction` with
:func:`register_target_secrets`: engines name public targets too), so that a printed command
still runs — the password then comes from ``PGPASSWORD`` or ``~/.pgpass``, never from the
command line.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

from harness.console import clean as printable
from harness.domain.redaction import register_target_secrets, without_credentials
from harness.providers.secrets import redact

__all__ = ["clean", "register_target_secrets", "scrub", "without_credentials"]

T = TypeVar("T")


def clean(text: str) -> str:
    """A text as it may be shown: credentials removed, registered secrets redacted, and no
    escape a terminal acts on, no control character XML refuses, no lone surrogate
    (:func:`harness.console.clean` makes them visible instead)."""
    return printable(redact(without_credentials(text)))


#: the longest line the live output and summary.md print (a service's flood of 2,000
#: connections once made one 37 KB line); results.json keeps every character
MAX_LINE = 2000


def bounded_lines(text: str, limit: int = MAX_LINE) -> str:
    """``text`` with every line over ``limit`` characters cut, saying how many were left out."""
    if len(text) <= limit:
        return text
    return "\n".join(line if len(line) <= limit else
                     f"{line[:limit]}… ({len(line) - limit:,} more characters in results.json)"
                     for line in text.split("\n"))


def scrub(value: T) -> T:
    """A copy of an event (any dataclass, tuple, dict or string) with every text cleaned."""
    if isinstance(value, str):
        return clean(value)  # type: ignore[return-value]
    if is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: scrub(getattr(value, f.name)) for f in fields(value)}
        return replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(scrub(v) for v in value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [scrub(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}  # type: ignore[return-value]
    return value


class RedactingStream:
    """A text stream (stdout, stderr) that removes every registered secret from what is written
    to it: the last writer of every printed line, whatever printed it (a command, a library, a
    traceback). Everything else is passed through to the wrapped stream."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    @property
    def wrapped(self) -> Any:
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
