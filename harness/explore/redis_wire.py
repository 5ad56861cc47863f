"""Redis's wire protocol (RESP2 and RESP3) for the holding proxy: where commands and replies end.

The proxy never rewrites a byte; it only needs to know where one *step* of a connection ends and
how many replies the step will get:

- a **step** is everything a client wrote in one go: one command, or a pipeline; a transaction is
  one step at its ``EXEC`` (``MULTI`` and the commands it queues do nothing until then, so they
  pass at once, and ``EXEC`` is held with the queued commands in its shape); ``EVAL`` /
  ``EVALSHA`` / ``FCALL`` are one command, so one step;
- its **shape** names it across runs: the command and its keys (``SET idem:…:lock NX``,
  ``MULTI[SET a, SET b]``, ``EVAL 3f2a9c01 lock:…``), never values;
- connection housekeeping (``HELLO``, ``AUTH``, ``SELECT``, ``CLIENT …``, ``PING``…) is
  *control*: it passes without a step, as it cannot race with anything;
- replies are counted (RESP3 pushes ``>`` are out of band and not counted; attributes ``|``
  precede the reply they annotate).

Clients send commands as arrays of bulk strings; the inline form (``PING\\r\\n``) is read too.
Anything else is :class:`NotRedis`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

CONTROL = frozenset({"HELLO", "AUTH", "SELECT", "CLIENT", "PING", "ECHO", "QUIT", "RESET",
                     "READONLY", "READWRITE", "COMMAND"})
ALL_KEYS = frozenset({"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH", "SINTER", "SUNION",
                      "SDIFF", "PFCOUNT"})
PAIRED_KEYS = frozenset({"MSET", "MSETNX"})
SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})
NO_KEY = frozenset({"MULTI", "EXEC", "DISCARD", "UNWATCH", "FLUSHDB", "FLUSHALL", "DBSIZE",
                    "INFO", "TIME", "SCRIPT", "FUNCTION", "CONFIG", "SCAN", "KEYS", "WAIT"})
SET_FLAGS = frozenset({"NX", "XX", "GET"})
MAX_LINE = 64 * 1024


class NotRedis(Exception):
    """The bytes are not RESP: the peer speaks another protocol (or TLS)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One parsed command: its arguments (the first is the name)."""

    args: tuple[bytes, ...]

    @property
    def name(self) -> str:
        return self.args[0].decode("latin-1").upper() if self.args else ""

    def keys(self) -> list[str]:
        """The command's keys (best effort: enough to name it, never to route it)."""
        name, rest = self.name, self.args[1:]
        if name in NO_KEY or name in CONTROL or not rest:
            return []
        if name in ALL_KEYS:
            picked = list(rest)
        elif name in PAIRED_KEYS:
            picked = list(rest[::2])
        elif name in SCRIPTS:
            try:
                count = int(rest[1]) if len(rest) > 1 else 0
            except ValueError:
                count = 0
            picked = list(rest[2:2 + count])
        else:
            picked = [rest[0]]
        return [k.decode("utf-8", "replace") for k in picked]

    def shape(self) -> str:
        """``SET idem:k:lock NX``, ``EVAL 3f2a9c01 lock:k``: the name, the keys, no values."""
        name = self.name
        words = [name]
        if name in ("EVAL", "EVAL_RO") and len(self.args) > 1:
            words.append(hashlib.sha1(self.args[1]).hexdigest()[:8])
        elif name in ("EVALSHA", "EVALSHA_RO", "FCALL", "FCALL_RO") and len(self.args) > 1:
            words.append(self.args[1].decode("utf-8", "replace")[:12])
        words += self.keys()
        if name == "SET":
            words += [a.decode("latin-1").upper() for a in self.args[3:]
                      if a.decode("latin-1").upper() in SET_FLAGS]
        return " ".join(words)


def _line(buf: bytes | bytearray, pos: int) -> tuple[bytes, int] | None:
    end = buf.find(b"\r\n", pos)
    if end < 0:
        if len(buf) - pos > MAX_LINE:
            raise NotRedis("a line longer than 64 KiB")
        return None
    return bytes(buf[pos:end]), end + 2


def _int(text: bytes, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise NotRedis(f"{what} {text[:20]!r} is not a number") from None


def parse_command(buf: bytes | bytearray, pos: int = 0) -> tuple[Command, int] | None:
    """The command starting at ``pos`` and where it ends; None while it is incomplete."""
    if pos >= len(buf):
        return None
    if buf[pos] != ord("*"):
        if buf[pos] < 0x20 or buf[pos] > 0x7E:
            raise NotRedis(f"a command starts with byte 0x{buf[pos]:02x}, not '*' or a letter")
        found = _line(buf, pos)  # inline: PING\r\n (telnet style)
        if found is None:
            newline = buf.find(b"\n", pos)
            if newline < 0:
                return None
            found = bytes(buf[pos:newline]), newline + 1
        text, end = found
        return Command(tuple(text.split())), end
    head = _line(buf, pos + 1)
    if head is None:
        return None
    count, at = _int(head[0], "an array length"), head[1]
    if count < 0 or count > 1024 * 1024:
        raise NotRedis(f"a command array of {count} elements")
    args = []
    for _ in range(count):
        if at >= len(buf):
            return None
        if buf[at] != ord("$"):
            raise NotRedis(f"a command argument starts with {bytes(buf[at:at + 1])!r}, not '$'")
        size_line = _line(buf, at + 1)
        if size_line is None:
            return None
        size, at = _int(size_line[0], "a bulk length"), size_line[1]
        if size < 0 or at + size + 2 > len(buf):
            if size < 0:
                raise NotRedis("a null bulk string in a command")
            return None
        args.append(bytes(buf[at:at + size]))
        at += size + 2
    return Command(tuple(args)), at


_LINE_TYPES = b"+-:_,#("
_BULK_TYPES = b"$!="
_AGGREGATES = b"*~>"


def reply_end(buf: bytes | bytearray, pos: int = 0) -> tuple[int, bool] | None:
    """Where the reply starting at ``pos`` ends, and whether it is a RESP3 push (out of band);
    None while it is incomplete. An attribute (``|``) belongs to the reply after it."""
    pending = 1  # values still to read at the current level, innermost last
    stack: list[int] = []
    push = pos < len(buf) and buf[pos] == ord(">")
    at = pos
    while True:
        if at >= len(buf):
            return None
        kind = buf[at]
        found = _line(buf, at + 1)
        if found is None:
            return None
        text, at = found
        if kind in _LINE_TYPES:
            pending -= 1
        elif kind in _BULK_TYPES:
            size = _int(text, "a bulk length")
            if size >= 0:
                if at + size + 2 > len(buf):
                    return None
                at += size + 2
            pending -= 1
        elif kind in _AGGREGATES or kind in b"%|":
            count = _int(text, "an aggregate length")
            if kind in b"%|":
                count *= 2
            if kind == ord("|"):
                pending += 1  # the attribute's own value is followed by the real reply
            pending -= 1
            if count > 0:
                stack.append(pending)
                pending = count
        else:
            raise NotRedis(f"a reply starts with byte 0x{kind:02x}")
        while pending == 0 and stack:
            pending = stack.pop()
        if pending == 0 and not stack:
            return at, push


@dataclass
class RedisFramer:
    """One client connection's commands, grouped into steps (see the module docstring)."""

    in_multi: bool = False
    queued: list[str] = field(default_factory=list)

    def split(self, buf: bytes | bytearray) -> tuple[list[Command], int, bool]:
        """The complete commands at the start of ``buf``, where they end, and whether ``buf``
        ends exactly after the last one (a client writes whole commands)."""
        commands: list[Command] = []
        at = 0
        while True:
            parsed = parse_command(buf, at)
            if parsed is None:
                return commands, at, at == len(buf)
            command, at = parsed
            if command.args:
                commands.append(command)

    def step(self, commands: list[Command]) -> tuple[str | None, int]:
        """The shape of a step made of ``commands`` (None: control, pass at once) and how many
        replies it gets."""
        shapes: list[str] = []
        held = False
        for command in commands:
            name = command.name
            if name == "MULTI":
                self.in_multi, self.queued = True, []
            elif name in ("EXEC", "DISCARD") and self.in_multi:
                self.in_multi = False
                if name == "EXEC":
                    shapes.append(f"MULTI[{', '.join(self.queued)}]")
                    held = True
                self.queued = []
            elif self.in_multi:
                self.queued.append(command.shape())
            elif name not in CONTROL:
                shapes.append(command.shape())
                held = True
        return (" + ".join(shapes) if held else None), len(commands)
