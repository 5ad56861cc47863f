"""PostgreSQL's v3 wire protocol for the holding proxy: startup, steps, statement shapes, replies.

The proxy never rewrites a byte. It reads the client's messages to cut them into *steps* and the
server's to see when a step is answered:

- **startup**: the first message has no type byte. ``SSLRequest`` and ``GSSENCRequest`` are
  answered ``N`` (the proxy speaks plain TCP; a client that *requires* TLS then gives up, and the
  proxy says so); ``CancelRequest`` is passed to the server on a connection of its own; a v3
  ``StartupMessage`` opens the session. Anything else is :class:`NotPostgres`.
- a **step** is one simple ``Query``, or the extended-protocol messages up to ``Sync`` (or
  ``Flush``): one statement with its parameters, answered up to its ``ReadyForQuery``;
- its **shape** is the statement text, whitespace collapsed and literals elided
  (``SELECT body FROM responses WHERE key = $1``); a ``Bind`` of a statement prepared earlier
  on the connection is named by that statement's text;
- transaction and session housekeeping that cannot race (``BEGIN``, ``SET``, ``SHOW``,
  ``SAVEPOINT``…, a ``Sync`` alone, a ``Parse`` without ``Execute``) is *control*: it passes at
  once. ``COMMIT`` and ``ROLLBACK`` are steps: they release locks and publish writes.
- from the server: ``BackendKeyData`` gives the backend pid (so the controller can ask
  ``pg_blocking_pids`` who a waiting statement waits for) and every ``ReadyForQuery`` ends one
  step's answer.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_3 = 196608
MAX_STARTUP = 10_000
MAX_MESSAGE = 1 << 30
CONTROL_SQL = re.compile(
    r"^\s*(BEGIN|START\s+TRANSACTION|SET|SHOW|RESET|DISCARD|DEALLOCATE|SAVEPOINT|RELEASE|"
    r"LISTEN|UNLISTEN)\b", re.IGNORECASE)
_STRING = re.compile(r"(?:[EeBbXxNn]|[Uu]&)?'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w$.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")
_SPACE = re.compile(r"\s+")
SHAPE_CHARS = 120


class NotPostgres(Exception):
    """The bytes are not the PostgreSQL v3 protocol."""


@lru_cache(maxsize=4096)  # a service sends the same few statements thousands of times
def statement_shape(sql: str) -> str:
    """``sql`` with literals elided and whitespace collapsed (at most 120 characters)."""
    text = _NUMBER.sub("?", _STRING.sub("?", sql))
    text = _SPACE.sub(" ", text).strip().rstrip(";").strip()
    return text if len(text) <= SHAPE_CHARS else text[:SHAPE_CHARS - 1] + "…"


@lru_cache(maxsize=4096)
def is_control(sql: str) -> bool:
    """A statement that cannot race: every part of ``sql`` is transaction or session
    housekeeping (an empty query too)."""
    parts = [p for p in sql.split(";") if p.strip()]
    return all(CONTROL_SQL.match(p) for p in parts)


def startup(buf: bytes | bytearray) -> tuple[int, int] | None:
    """The first message's ``(length, code)`` once 8 bytes are in; :class:`NotPostgres` if it
    cannot be a startup message."""
    if len(buf) < 8:
        return None
    length, code = struct.unpack("!ii", bytes(buf[:8]))
    if length < 8 or length > MAX_STARTUP:
        raise NotPostgres(f"the first message claims {length} bytes (first bytes "
                          f"{bytes(buf[:8])!r})")
    if code not in (SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST) and code >> 16 != 3:
        raise NotPostgres(f"protocol code {code} is neither v3 startup nor an SSL, GSS or "
                          "cancel request")
    return length, code


def messages(buf: bytes | bytearray, pos: int = 0) -> tuple[list[tuple[int, bytes]], int]:
    """The complete typed messages from ``pos`` (type byte, payload) and where they end."""
    found: list[tuple[int, bytes]] = []
    while len(buf) - pos >= 5:
        (length,) = struct.unpack("!i", bytes(buf[pos + 1:pos + 5]))
        if length < 4 or length > MAX_MESSAGE:
            raise NotPostgres(f"a message of type {bytes(buf[pos:pos + 1])!r} claims {length} "
                              "bytes")
        end = pos + 1 + length
        if end > len(buf):
            break
        found.append((buf[pos], bytes(buf[pos + 5:end])))
        pos = end
    return found, pos


def _cstring(payload: bytes, at: int) -> tuple[str, int]:
    end = payload.index(b"\0", at)
    return payload[at:end].decode("utf-8", "replace"), end + 1


@dataclass(frozen=True, slots=True)
class PgStep:
    """Client messages that go to the server together: their exact bytes, their shape (None:
    control, passes at once) and how many ``ReadyForQuery`` answers they get."""

    raw: bytes
    shape: str | None
    answers: int


@dataclass
class PgFramer:
    """One client connection's messages, grouped into steps (see the module docstring)."""

    statements: dict[str, str] = field(default_factory=dict)  # prepared name → SQL
    portals: dict[str, str] = field(default_factory=dict)  # portal name → SQL

    def cut(self, buf: bytes | bytearray) -> tuple[list[PgStep], int]:
        """The steps at the start of ``buf`` and how many bytes they take; messages after the
        last ``Sync`` / ``Query`` / ``Flush`` wait for the rest of their step."""
        found, _ = messages(buf)
        steps: list[PgStep] = []
        batch: list[tuple[int, bytes]] = []
        at = consumed = 0
        for kind, payload in found:
            batch.append((kind, payload))
            at += 5 + len(payload)
            if kind in b"QSHFXpdcf":  # p: a password / SASL message during the login
                shapes = [s for s in self._shapes(batch) if s is not None]
                answers = sum(1 for k, _ in batch if k in b"QSF")
                steps.append(PgStep(bytes(buf[consumed:at]),
                                    " ; ".join(shapes) if shapes else None, answers))
                batch, consumed = [], at
        return steps, consumed

    def _shapes(self, batch: list[tuple[int, bytes]]) -> list[str | None]:
        shapes: list[str | None] = []
        for kind, payload in batch:
            if kind == ord("Q"):
                sql = payload.rstrip(b"\0").decode("utf-8", "replace")
                shapes.append(None if is_control(sql) else statement_shape(sql))
            elif kind == ord("P"):
                name, at = _cstring(payload, 0)
                sql, _ = _cstring(payload, at)
                self.statements[name] = sql
            elif kind == ord("B"):
                portal, at = _cstring(payload, 0)
                name, _ = _cstring(payload, at)
                self.portals[portal] = self.statements.get(name, "")
            elif kind == ord("E"):
                portal, _ = _cstring(payload, 0)
                sql = self.portals.get(portal, "")
                shapes.append(None if is_control(sql) else statement_shape(sql))
            elif kind == ord("C") and payload[:1] == b"S":
                name, _ = _cstring(payload, 1)
                self.statements.pop(name, None)
            elif kind == ord("F"):
                shapes.append("function call")
        return shapes


def backend_pid(kind: int, payload: bytes) -> int | None:
    """The backend pid from a ``BackendKeyData`` message, else None."""
    if kind == ord("K") and len(payload) >= 8:
        return int(struct.unpack("!i", payload[:4])[0])
    return None
