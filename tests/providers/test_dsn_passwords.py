"""A DSN's password is redacted where it stands, on every path that prints a DSN; free text is
scrubbed by whole tokens only, never of a word that is also the DSN's scheme, user or host."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.domain.redaction import redact, redact_about, redact_dsn, register_dsn
from harness.providers.secrets import register_secret
from tests import _cli

KV_PASSWORD = "kvCanary-Pw-5Tq9"


@pytest.mark.parametrize("command", [
    ["serve", "--db"], ["scenarios", "matrix", "--db"], ["check", "--db"],
    ["check", "--target"], ["scenarios", "run", "--target"], ["explore", "--target"],
])
def test_a_key_value_dsn_never_shows_its_password(command: list[str], tmp_path: Path) -> None:
    dsn = f"host=127.0.0.1 port=1 user=app password={KV_PASSWORD} dbname=jobs"
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "providers.yaml").write_bytes((root / "providers.yaml").read_bytes())
    done = _cli.run([*command, dsn], cwd=tmp_path, timeout=120,
                    env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root),
                         "HARNESS_TOKENS": "tok-aaaaaaaaa=alice"})
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert KV_PASSWORD not in output
    assert "Traceback" not in output and "fix:" in output, output


def test_a_password_that_is_also_the_user_and_scheme_does_not_mangle_text() -> None:
    dsn = "postgresql://postgres:postgres@127.0.0.1:5432/postgres"
    register_dsn(dsn)  # the common development DSN: its password is every other word of it
    assert redact_dsn(dsn) == "postgresql://postgres:[REDACTED]@127.0.0.1:5432/postgres"
    target = "postgresql://postgres@127.0.0.1:5432/harness_t_1"
    assert redact(target) == target
    assert redact(f"user {'postgres'!r} failed") == "user 'postgres' failed"
    message = f'connection to {dsn} failed: password authentication failed for user "postgres"'
    assert redact_about(message, dsn) == message.replace(":postgres@", ":[REDACTED]@")


def test_free_text_is_scrubbed_by_whole_tokens_only() -> None:
    register_secret("hunter2tok")
    assert redact("key=hunter2tok; again 'hunter2tok'") == "key=[REDACTED]; again '[REDACTED]'"
    assert redact("xhunter2tokx and hunter2token") == "xhunter2tokx and hunter2token"


def test_a_dsn_password_in_a_mutant_url_is_masked_where_it_stands() -> None:
    text = "mutant:lost-update@postgresql://app:pw-Mutant-9k@db/jobs failed"
    assert redact_dsn(text) == "mutant:lost-update@postgresql://app:[REDACTED]@db/jobs failed"
