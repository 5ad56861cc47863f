"""harness.console: foreign text prints as text — no markup, no escapes, always encodable."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from harness.console import clean, console, echo, markup, text

NASTY = [
    "[/b]", "[bold red]x", "^[/a-z]{2}$", "[a-z]", "\\", "foo\\", "\\[x]", "[link=file:///x]y",
    ":smile:", "\x1b[31mred\x1b[0m", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "nul\x00",
    "bell\x07", "cr\rover", "\ud800lone", "rtl\u202eevil", "\x9bcsi",
]


def test_clean_makes_terminal_escapes_visible_and_keeps_newlines_and_tabs() -> None:
    assert clean("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert clean("a\x00b\x7fc\x9bd") == "a\\x00b\\x7fc\\x9bd"
    assert clean("cr\rover") == "cr\\rover"
    assert clean("rtl\u202eevil") == "rtl\\u202eevil"
    assert clean("\ud800lone") == "\\ud800lone"
    assert clean("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert clean("two\nlines\t", one_line=True) == "two\\nlines\\t"
    assert clean("日本語 ✅ [x]") == "日本語 ✅ [x]"
    assert clean(12) == "12"


def test_clean_limits_a_huge_value_and_says_how_much_was_left_out() -> None:
    assert clean("x" * 1_000_000, limit=10) == "x" * 10 + "… (999990 more characters)"


@given(st.text())
def test_cleaned_text_is_always_encodable_and_has_no_escape_character(value: str) -> None:
    out = clean(value)
    out.encode("utf-8")
    assert "\x1b" not in out and "\x00" not in out and "\r" not in out


@given(st.text())
def test_markup_keeps_foreign_values_literal(value: str) -> None:
    rendered = markup("[red]ineligible[/] {why} [bold]{n}[/]", why=value, n=value)
    assert rendered.plain == f"ineligible {clean(value)} {clean(value)}"


def test_printing_nasty_values_through_a_console_prints_them_literally() -> None:
    buffer = io.StringIO()
    out = console(file=buffer, width=200, force_terminal=False)
    for value in NASTY:
        out.print(text(value))
        out.print(markup("[green]{}[/]", value))
        out.print(clean(value))  # a plain string is never markup on this console
    printed = buffer.getvalue()
    assert "\x1b" not in printed and "\x00" not in printed
    for value in ("[/b]", "[bold red]x", "^[/a-z]{2}$", "[a-z]", ":smile:", "[link=file:///x]y"):
        assert printed.count(value) == 3, value
    printed.encode("utf-8")


def test_echo_prints_cleaned_values() -> None:
    buffer = io.StringIO()
    echo("why:", "\x1b[2Jgone\ud800", file=buffer)
    assert buffer.getvalue() == "why: \\x1b[2Jgone\\ud800\n"


def test_markup_styles_the_values_it_surrounds() -> None:
    rendered = markup("[red]{}[/] and {plain}", "[/b]x\\", plain="[bold]")
    assert rendered.plain == "[/b]x\\ and [bold]"
    (span,) = rendered.spans
    assert (span.start, span.end, str(span.style)) == (0, 6, "red")
    assert markup("{:.0%} of {!r}", 0.5, "a").plain == "50% of 'a'"
