"""providers.yaml: the shipped example loads, the schema is published, errors name file/line/fix."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from harness.domain.errors import ConfigError
from harness.providers import ProviderConfig, load_providers, parse_providers, providers_json_schema
from harness.providers.config import SCHEMA_FILE, shipped_json_schema
from tests.providers.conftest import make_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "providers.yaml"

GOOD = """\
version: 1
providers:
  primary:
    kind: openai-chat
    base_url: https://api.openai.com/v1
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    tokenizer: tiktoken:cl100k_base
    context_window: 128000
  fallback:
    kind: anthropic-messages
    base_url: fake://conformant
    model: claude-test
    tokenizer: tiktoken:cl100k_base
    context_window: 200000
chains:
  ticket_triage:
    - {provider: primary}
    - {provider: fallback, failover: manual}
"""


def error_for(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_providers(text, source="providers.yaml")
    return info.value


def test_the_shipped_example_loads_and_runs_offline() -> None:
    providers = load_providers(EXAMPLE)
    assert providers.chains["ticket_triage"][0].provider == "openai-primary"
    assert all(cfg.is_fake for cfg in providers.providers.values())
    assert {cfg.kind for cfg in providers.providers.values()} == {"openai-chat",
                                                                   "anthropic-messages"}


def test_defaults_and_ids() -> None:
    providers = parse_providers(GOOD)
    primary = providers.providers["primary"]
    assert primary.id == "primary"
    assert (primary.temperature, primary.max_output_tokens) == (0.0, 1024)
    assert (primary.timeout.connect, primary.timeout.read) == (5.0, 60.0)
    assert providers.chains["ticket_triage"][0].failover == "auto"
    assert providers.chain_for("ticket_triage")[1].failover == "manual"


def test_a_missing_chain_names_the_fix() -> None:
    with pytest.raises(ConfigError, match="no failover chain") as info:
        parse_providers(GOOD).chain_for("other_contract")
    assert info.value.field == "chains.other_contract"


def test_the_published_schema_is_current_and_validates_the_example() -> None:
    assert shipped_json_schema() == json.loads(json.dumps(providers_json_schema())), (
        f"regenerate {SCHEMA_FILE.name}: python -c 'from harness.providers.config import "
        "write_json_schema; write_json_schema()'")
    schema = shipped_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"providers": {"x": {"kind": "grpc"}}}, schema)


def test_an_inline_key_is_refused_without_showing_it() -> None:
    key = "sk-live-DO-NOT-PRINT-1234567890"
    err = error_for(GOOD.replace("    api_key_env: OPENAI_API_KEY\n",
                                 f"    api_key: {key}\n"))
    assert (err.file, err.line, err.field) == ("providers.yaml", 7, "providers.primary.api_key")
    assert "api_key_env: OPENAI_API_KEY" in (err.fix or "")
    assert key not in str(err) and key not in err.message


def test_a_key_pasted_into_api_key_env_is_refused_without_showing_it() -> None:
    key = "sk-proj-abcdefABCDEF0123456789"
    err = error_for(GOOD.replace("api_key_env: OPENAI_API_KEY", f"api_key_env: {key}"))
    assert err.line == 7 and err.field == "providers.primary.api_key_env"
    assert "NAME of an environment variable" in err.message
    assert key not in str(err)


@pytest.mark.parametrize(("change", "line", "field", "words"), [
    (("kind: openai-chat", "kind: openai"), 4, "providers.primary.kind", "openai-chat"),
    (("    model: gpt-4o-mini\n", "    model: gpt-4o-mini\n    modle: typo\n"), 7,
     "providers.primary.modle", "unknown field 'modle'"),
    (("    context_window: 128000\n", ""), 3, "providers.primary.context_window",
     "'context_window' is required"),
    (("tokenizer: tiktoken:cl100k_base\n    context_window: 128000",
      "tokenizer: sentencepiece\n    context_window: 128000"), 8, "providers.primary.tokenizer",
     "should match pattern"),
    (("base_url: https://api.openai.com/v1", "base_url: api.openai.com"), 5,
     "providers.primary.base_url", "http(s)://"),
    (("base_url: fake://conformant", "base_url: fake://flaky"), 12,
     "providers.fallback.base_url", "unknown behaviour"),
    (("    - {provider: fallback, failover: manual}", "    - {provider: fallback, failover: yes}"),
     19, "chains.ticket_triage.1.failover", "auto"),
    (("    - {provider: fallback, failover: manual}", "    - {provider: fallbak}"), 19,
     "chains.ticket_triage.1.provider", "unknown provider 'fallbak'"),
    (("    - {provider: fallback, failover: manual}", "    - {provider: primary}"), 19,
     "chains.ticket_triage.1.provider", "appears twice"),
])
def test_errors_name_the_line_field_and_fix(change: tuple[str, str], line: int, field: str,
                                            words: str) -> None:
    old, new = change
    assert old in GOOD
    err = error_for(GOOD.replace(old, new))
    assert (err.file, err.line, err.field) == ("providers.yaml", line, field), str(err)
    assert words in err.message
    assert err.fix


def test_a_real_endpoint_needs_api_key_env() -> None:
    err = error_for(GOOD.replace("    api_key_env: OPENAI_API_KEY\n", ""))
    assert err.line == 3 and "api_key_env is required" in err.message


def test_anthropic_temperature_range() -> None:
    err = error_for(GOOD.replace("    model: claude-test\n",
                                 "    model: claude-test\n    temperature: 1.5\n"))
    assert "between 0 and 1" in err.message and err.field == "providers.fallback"


def test_yaml_problems() -> None:
    assert "the file is empty" in error_for("").message
    bad = error_for("providers:\n  a: [1, 2\n")
    assert bad.line == 3 and "not valid YAML" in bad.message
    dup = error_for(GOOD.replace("  fallback:\n", "  primary:\n"))
    assert dup.line == 10 and "duplicate key 'primary' (first on line 3)" in dup.message
    assert "must be a mapping" in error_for("- just\n- a list\n").message


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found") as info:
        load_providers(tmp_path / "missing.yaml")
    assert info.value.file and info.value.file.endswith("missing.yaml")
    path = tmp_path / "p.yaml"
    path.write_text(GOOD.replace("context_window: 128000", "context_window: -1"))
    with pytest.raises(ConfigError) as info:
        load_providers(path)
    assert info.value.file == str(path) and info.value.line == 9


def test_config_hash_covers_behaviour_not_names_keys_or_timeouts() -> None:
    base = make_config("openai-chat", "https://api.openai.com/v1")
    same = [
        make_config("openai-chat", "https://api.openai.com/v1", id="renamed"),
        make_config("openai-chat", "https://api.openai.com/v1", api_key_env="OTHER_KEY"),
        make_config("openai-chat", "https://api.openai.com/v1/", timeout={"connect": 1,
                                                                           "read": 9}),
    ]
    different = [
        make_config("openai-chat", "https://api.openai.com/v1", model="gpt-other"),
        make_config("openai-chat", "https://api.openai.com/v1", temperature=0.5),
        make_config("openai-chat", "https://api.openai.com/v1", max_output_tokens=100),
        make_config("openai-chat", "https://gateway.example/v1"),
        make_config("openai-chat", "https://api.openai.com/v1", context_window=4096),
        make_config("openai-chat", "https://api.openai.com/v1", tokenizer="tiktoken:o200k_base"),
        make_config("anthropic-messages", "https://api.openai.com/v1"),
    ]
    assert len(base.config_hash()) == 64
    assert all(c.config_hash() == base.config_hash() for c in same)
    assert len({c.config_hash() for c in different} | {base.config_hash()}) == len(different) + 1


def test_config_is_immutable() -> None:
    cfg = make_config("openai-chat", "fake://conformant")
    with pytest.raises(ValueError, match="frozen"):
        cfg.model = "x"  # type: ignore[misc]
    assert isinstance(cfg, ProviderConfig)


def test_a_yaml_error_under_an_under_indented_line_names_that_line() -> None:
    """`model:` indented two spaces too few reads as a sibling of `primary:`; YAML fails only on
    the next line. The message names the under-indented line (issue 34)."""
    text = GOOD.replace("    model: gpt-4o-mini\n", "  model: gpt-4o-mini\n", 1)
    lines = text.splitlines()
    culprit = lines.index("  model: gpt-4o-mini") + 1
    err = error_for(text)
    assert err.line == culprit, err
    assert f"line {culprit + 1} is indented under this line" in err.message
    assert f"indent line {culprit} like" in (err.fix or "")
    over = GOOD.replace("    model: gpt-4o-mini\n", "      model: gpt-4o-mini\n", 1)
    assert error_for(over).line == culprit  # over-indented: the line itself, as before
