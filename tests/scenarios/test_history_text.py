"""Text is text: a body in a history line is escaped and shortened, never printed raw."""

from __future__ import annotations

from harness.scenarios.history import Op, shown_text
from harness.scenarios.render import format_op

HTML = "<!DOCTYPE html>\n<html><head><title>Error</title></head>\n<body><pre>Internal " \
       "Server Error</pre></body></html>\n"


def test_a_500_html_body_stays_on_its_line_escaped_and_short() -> None:
    op = Op(3, 1.0, "2026-01-01T00:00:00Z", "alice", "fail", "create",
            {"status": 500, "error": "http_500", "body": HTML})
    line = format_op(op)
    assert "\n" not in line and "\\n" in line
    assert 'body="<!DOCTYPE html>\\n<html>' in line and '…" ' in line and len(line) < 160
    assert "error=http_500 " in line and "status=500" in line


def test_plain_tokens_stay_bare_and_quotes_are_escaped() -> None:
    assert shown_text("idempotency_key_reused") == "idempotency_key_reused"
    assert shown_text('say "hi"\tnow') == '"say \\"hi\\"\\tnow"'
    assert shown_text("\x1b[31mred") == '"\\u001b[31mred"'  # no terminal escape reaches a tty
