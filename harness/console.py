"""Print text that came from outside (models, contracts, files, services) as text, never markup.

A model that answers with a key like ``"[/b]"``, a schema pattern ``^[/a-z]{2}$`` in a reason, a
service that echoes ``\\x1b]8;;…`` or a NUL into an error body: none of these may style, hide,
rewrite or crash what we print. Every command prints through this module:

- :func:`clean` — the string to print: ANSI/terminal escapes, C0/C1 control characters (except
  newline and tab), Unicode bidi overrides and line separators become visible escapes
  (``\\x1b``, ``\\x00``, ``\\u202e``); lone surrogates (``\\ud800``, from ``surrogateescape``
  or a broken JSON string) become visible escapes too, so encoding to UTF-8 never fails.
- :func:`text` — a rich :class:`~rich.text.Text` of a cleaned value (never parsed as markup),
  for table cells and anything handed to rich.
- :func:`markup` — *our* markup template with foreign values filled in as literal text:
  ``markup("[red]ineligible[/] {why}", why=record.why())``.
- :func:`console` — a rich ``Console`` that never interprets a plain string as markup or emoji
  (``markup=False``, ``emoji=False``, ``highlight=False``); style with :func:`markup` / Text.
- :func:`echo` — ``print`` for plain-print commands, with every value cleaned.

Pure, no I/O apart from :func:`echo`; importing it does not import rich (lazy), so plain-print
commands stay light.
"""

from __future__ import annotations

import re
import string
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["clean", "console", "echo", "markup", "text"]

# Everything a terminal may act on, and what cannot be encoded: C0 (bar \t \n), DEL, C1,
# bidi embeddings/overrides/isolates (Trojan-source style reordering), the Unicode line and
# paragraph separators, and surrogates (a str holding one cannot be written as UTF-8).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
    "\ud800-\udfff]"
)
_UNSAFE_ONE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\t\n]")
_TOKEN_MARK = "\ue000"  # delimits a field's place in a parsed template
_TOKEN = re.compile("\ue000(\\d+)\ue000")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean(value: object, *, limit: int | None = None, one_line: bool = False) -> str:
    """``value`` as a string that is safe to print: no escapes a terminal acts on, encodable.

    ``one_line`` also escapes newlines and tabs (for table cells and one-line summaries).
    ``limit`` shortens the result to about that many characters, saying how many were left out.
    """
    string = value if isinstance(value, str) else _str(value)
    if limit is not None and len(string) > limit:
        left_out = len(string) - limit
        string = string[:limit]
        suffix = f"… ({left_out} more characters)"
    else:
        suffix = ""
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE).sub(_escape, string) + suffix


def _str(value: object) -> str:
    try:
        return str(value)
    except Exception as exc:  # a foreign object whose __str__ fails must not stop the report
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def text(value: object, style: str | None = None, *, one_line: bool = False) -> Text:
    """A rich ``Text`` of ``value``, cleaned; markup in it stays literal."""
    from rich.text import Text

    return Text(clean(value, one_line=one_line), style=style or "")


def markup(template: str, /, *args: object, **values: object) -> Text:
    """Our rich-markup ``template`` (``str.format`` fields) with foreign values as literal text.

    ``template`` is written by us and may use rich markup; each field is formatted, cleaned and
    inserted *after* the markup is parsed, taking the styles that surround it, so
    ``markup("[red]{}[/]", "[/b]")`` prints ``[/b]`` in red instead of crashing, and no value
    (a trailing backslash, an emoji code such as ``:smile:``) can change the markup around it.
    """
    from rich.text import Text

    formatter = string.Formatter()
    tokened: list[str] = []
    filled: list[str] = []
    auto = 0
    for literal, name, spec, conversion in formatter.parse(template):
        if _TOKEN_MARK in literal:
            raise ValueError("a markup template may not contain U+E000")
        tokened.append(literal)
        if name is None:
            continue
        if name == "":
            name, auto = str(auto), auto + 1
        value, _ = formatter.get_field(name, args, values)
        value = formatter.format_field(formatter.convert_field(value, conversion), spec or "")
        tokened.append(f"{_TOKEN_MARK}{len(filled)}{_TOKEN_MARK}")
        filled.append(clean(value))
    parsed = Text.from_markup("".join(tokened), emoji=False)
    out = Text(style=parsed.style, end=parsed.end)
    at = 0
    for match in _TOKEN.finditer(parsed.plain):
        start, end = match.span()
        out.append_text(parsed[at:start])
        piece = Text(filled[int(match.group(1))])
        for span in parsed.spans:
            if span.start <= start and span.end >= end:
                piece.stylize(span.style)
        out.append_text(piece)
        at = end
    out.append_text(parsed[at:])
    return out


def console(
    *,
    stderr: bool = False,
    file: IO[str] | None = None,
    width: int | None = None,
    quiet: bool = False,
    **options: Any,
) -> Console:
    """A rich ``Console`` on which a plain string is never markup, emoji or highlighted.

    Style with :func:`markup` or :func:`text`; pass foreign strings as ``text(value)``, or
    ``clean(value)`` (a plain string prints literally on this console, but ``clean`` is still
    needed to neutralise terminal escapes). ``NO_COLOR`` is honoured by rich itself.
    """
    from rich.console import Console

    return Console(
        stderr=stderr, file=file, width=width, quiet=quiet,
        markup=False, emoji=False, highlight=False, **options,
    )


def echo(
    *values: object,
    sep: str = " ",
    end: str = "\n",
    file: IO[str] | None = None,
    flush: bool = False,
) -> None:
    """``print(*values)`` with every value :func:`clean`-ed (for plain-print commands)."""
    print(*(clean(v) for v in values), sep=sep, end=end, file=file or sys.stdout, flush=flush)

