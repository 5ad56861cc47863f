"""One voice for errors: the same mistake in a providers file, a contract and a target profile
is said the same way — file:line (field): what is wrong, then `fix:` with a did-you-mean —
never pydantic's own words; a missing key variable names the file and line that ask for it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.contracts.loader import load_contract
from harness.domain.errors import ConfigError
from harness.providers.clients import client_for
from harness.providers.config import parse_providers
from harness.target.model import load_profile

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = """\
version: 1
providers:
  real:
    kind: openai-chat
    base_url: https://api.openai.com/v1
    model: gpt-4o-mini
    api_key_env: FH_TEST_KEY_THAT_IS_NOT_SET
    temprature: 0
    max_output_tokens: 512
    tokenizer: tiktoken:cl100k_base
    context_window: 128000
chains:
  ticket_triage:
    - {provider: real, failover: auto}
"""


def errors(tmp_path: Path) -> dict[str, ConfigError]:
    found: dict[str, ConfigError] = {}
    with pytest.raises(ConfigError) as info:
        parse_providers(PROVIDERS, source="providers.yaml")
    found["providers"] = info.value
    contract = tmp_path / "ticket_triage"
    shutil.copytree(ROOT / "contracts" / "ticket_triage", contract)
    text = (contract / "contract.yaml").read_text("utf-8")
    (contract / "contract.yaml").write_text(text.replace("  samples: 3", "  sampels: 3"), "utf-8")
    with pytest.raises(ConfigError) as info:
        load_contract(contract)
    found["contract"] = info.value
    profile = tmp_path / "p.profile.yaml"
    profile.write_text("name: x\ncapabilites: [jobs]\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load_profile(profile)
    found["profile"] = info.value
    return found


def test_a_misspelt_field_is_said_the_same_way_in_every_file_kind(tmp_path: Path) -> None:
    for kind, err in errors(tmp_path).items():
        text = str(err)
        assert err.file and err.line and err.field, (kind, text)
        assert "unknown field" in err.message and "did you mean" in err.message, (kind, text)
        assert err.fix and err.fix.startswith("the fields here are: "), (kind, err.fix)
        assert "Extra inputs" not in text and "check its spelling" not in text, (kind, text)


def test_a_missing_key_variable_names_the_file_and_line_that_ask_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FH_TEST_KEY_THAT_IS_NOT_SET", raising=False)
    parsed = parse_providers(PROVIDERS.replace("temprature", "temperature"),
                             source="providers.yaml")
    with pytest.raises(ConfigError) as info:
        client_for(parsed.providers["real"])
    err = info.value
    assert (err.file, err.line, err.field) == ("providers.yaml", 7, "providers.real.api_key_env")
    assert "FH_TEST_KEY_THAT_IS_NOT_SET is not set" in err.message


def test_the_cli_prints_file_line_field_then_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "providers.yaml").write_text(PROVIDERS, "utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["gate"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: providers.yaml:8 (providers.real.temprature): unknown field "
                             "'temprature' (did you mean 'temperature'?)"), err
    assert err[1].startswith("  fix: the fields here are: ")


def test_a_missing_counter_variable_names_the_profile_line_that_asks_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.scenarios.targets.side_effects import open_counter

    monkeypatch.delenv("FH_TEST_JOBS_DB_NOT_SET", raising=False)
    path = tmp_path / "sql.profile.yaml"
    text = (ROOT / "examples" / "jobs-sql.profile.yaml").read_text("utf-8")
    variable = text.split("url_env:", 1)[1].split(",", 1)[0].split("}", 1)[0].strip()
    path.write_text(text.replace(variable, "FH_TEST_JOBS_DB_NOT_SET"), "utf-8")
    profile = load_profile(path)
    assert profile.side_effects is not None
    with pytest.raises(ConfigError) as info:
        open_counter(None, profile.side_effects.sql, http=None, base_url="")  # type: ignore[arg-type]
    err = info.value
    line = next(n for n, row in enumerate(path.read_text("utf-8").splitlines(), 1)
                if "url_env: FH_TEST_JOBS_DB_NOT_SET" in row)
    assert (err.file, err.line) == (str(path), line), str(err)
    assert "FH_TEST_JOBS_DB_NOT_SET is not set" in err.message
    assert err.fix and err.fix.startswith("export FH_TEST_JOBS_DB_NOT_SET=")
