"""``failover-harness serve`` configuration errors: exit 2, file/line/field and the fix, no token
text and no password in the message; and the token loaders themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.errors import ConfigError
from harness.service.auth import load_tokens, load_tokens_file, parse_tokens_env
from tests.service.serving import ALICE_TOKEN, free_port, run_cli

SECRET = "tok-very-secret-Qm4Zt8"


def test_a_bad_tokens_file_line_is_exit_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(f"{ALICE_TOKEN}: alice\n'{SECRET} with space': bob\n", encoding="utf-8")
    result = run_cli(["serve", "--tokens-file", str(path), "--db", f"sqlite:///{tmp_path}/x.db"])
    assert result.returncode == 2
    assert f"{path}:2" in result.stderr and "fix:" in result.stderr
    assert SECRET not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (f"{SECRET}: alice\n{SECRET}: bob\n", 2, "twice"),
        (f"{SECRET}: [alice]\n", 1, "token: owner"),
        (f"- {SECRET}\n", 1, "mapping"),
        (f"{SECRET}: alice\n  bad: [\n", 2, "YAML"),
        (f"{SECRET}: 'has space'\n", 1, "owner"),
        ("", None, "mapping"),
    ],
)
def test_tokens_file_errors_say_where_but_not_the_token(
    tmp_path: Path, text: str, line: int | None, what: str
) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_tokens_file(path)
    assert caught.value.line == line and caught.value.file == str(path)
    assert what in caught.value.message
    assert SECRET not in caught.value.message


def test_tokens_env_errors_name_the_entry_not_the_token() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_tokens_env(f"{ALICE_TOKEN}=alice,{SECRET} x=bob")
    assert "entry 2" in caught.value.message and SECRET not in caught.value.message
    with pytest.raises(ConfigError, match="entry 1 has no '='"):
        parse_tokens_env(SECRET)
    table = parse_tokens_env("tok1=alice, tok2=bob,")
    assert (table.owner_for("tok1"), table.owner_for("tok2"), table.owner_for("tok3")) == (
        "alice", "bob", None,
    )


def serve(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tokens: str | None = f"{ALICE_TOKEN}=alice",
) -> tuple[int, str]:
    """``failover-harness serve ARGS`` in-process (every case here stops before uvicorn)."""
    monkeypatch.delenv("HARNESS_TOKENS", raising=False)
    if tokens is not None:
        monkeypatch.setenv("HARNESS_TOKENS", tokens)
    try:
        code = main(["serve", *args])
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.err + captured.out


def test_no_tokens_at_all_is_exit_2_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="no tokens"):
        load_tokens(None, {})
    code, output = serve(["--db", f"sqlite:///{tmp_path}/x.db"], capsys, monkeypatch, None)
    assert code == 2
    assert "--tokens-file" in output and "HARNESS_TOKENS" in output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--db", "mysql://x/y"], "unsupported store URL"),
        (["--db", "sqlite:///:memory:"], ":memory:"),
        (["--workers", "0"], "--workers"),
        (["--port", "70000"], "--port"),
    ],
)
def test_bad_options_are_exit_2(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, output = serve(args, capsys, monkeypatch)
    assert code == 2, output
    assert needle in output and "Traceback" not in output


@pytest.mark.postgres
def test_an_unreachable_database_is_exit_2_without_the_password(
    pg_template: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql://harness:pw-{SECRET}@127.0.0.1:{free_port()}/nowhere"
    code, output = serve(["--db", url], capsys, monkeypatch)
    assert code == 2, output
    assert "cannot open the store" in output and "--db" in output
    assert SECRET not in output
