"""The drill profile: the documented example loads; mistakes are errors at file:line with a fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.domain.errors import ConfigError
from harness.drill.drills import parse_names
from harness.target.drill_profile import load_drill

DOCS = Path(__file__).resolve().parents[2] / "docs" / "drill.md"
GATEWAY = """\
name: gw
drill:
  submit:
    kind: chat
    path: /v1/chat/completions
    headers: {x-portkey-config: "${CFG}"}
    body: {model: m, messages: [{role: user, content: "answer {tag}"}]}
  providers:
    - {name: primary, wire: openai, role: primary, port: "${P1}"}
    - {name: fallback, wire: anthropic, role: fallback, port: 9}
  timeouts: {provider_s: 1}
"""


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("index", [0, 1])
def test_profile_the_documented_examples_load(tmp_path: Path, index: int) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(_yaml_blocks()[index], encoding="utf-8")
    profile = load_drill(path)
    env = {"PRIMARY_PORT": "4101", "FALLBACK_PORT": "4102", "SUMMARIES_TOKEN": "s3cret",
           "PORTKEY_CONFIG": "{}"}
    ups = profile.upstreams(env)
    assert [(u.role, u.port) for u in ups] == [("primary", 4101), ("fallback", 4102)]
    assert {u.kind for u in ups} <= {"openai-chat", "anthropic-messages"}


def _error(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_drill(path)
    return info.value


def test_profile_missing_tag_names_the_line_and_the_fix(tmp_path: Path) -> None:
    err = _error(tmp_path, GATEWAY.replace("answer {tag}", "answer"))
    assert err.line == 7 and "{tag}" in str(err) and err.fix and "put {tag}" in err.fix


def test_profile_unknown_wire_and_bad_port(tmp_path: Path) -> None:
    err = _error(tmp_path, GATEWAY.replace("wire: anthropic", "wire: gemini"))
    assert err.line == 10 and "openai" in (err.fix or "")
    err = _error(tmp_path, GATEWAY.replace('port: "${P1}"', "port: lots"))
    assert err.line == 9 and "${NAME}" in (err.fix or "")


def test_profile_non_loopback_host_is_refused(tmp_path: Path) -> None:
    err = _error(tmp_path, GATEWAY.replace("port: 9}", "port: 9, host: 10.0.0.5}"))
    assert err.line == 10 and "loopback" in str(err)


def test_profile_env_interpolation_and_unset_variable(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(GATEWAY, encoding="utf-8")
    profile = load_drill(path)
    assert profile.headers({"CFG": "x"}) == {"x-portkey-config": "x"}
    with pytest.raises(ConfigError) as info:
        profile.upstreams({})
    assert info.value.line == 9 and "P1" in str(info.value)
    assert profile.upstreams({}, ports={"primary": 5000})[0].port == 5000


def test_profile_create_job_needs_observe_and_hedge_needs_after(tmp_path: Path) -> None:
    text = GATEWAY.replace("kind: chat", "kind: create_job")
    assert "observe" in str(_error(tmp_path, text))
    text = GATEWAY + "  policy: {hedge: {allowed: true}}\n"
    assert _error(tmp_path, text).line == 12


def test_profile_a_misspelled_status_class_is_named_with_the_spelling_meant(
        tmp_path: Path) -> None:
    """``succeded`` is an unknown key (did you mean 'succeeded'), not a missing 'succeeded',
    and the fix points at docs/drill.md."""
    path = tmp_path / "p.yaml"
    path.write_text(_yaml_blocks()[0].replace("      succeeded: [done]",
                                              "      succeded: [done]"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_drill(path)
    text = str(caught.value)
    assert "unknown key 'succeded', did you mean 'succeeded'" in text
    assert "docs/drill.md" in text and f"{path}:" in text


def test_profile_drill_names_take_underscores_and_suggest_the_nearest() -> None:
    assert parse_names("double_click,re_click") == ["double-click", "re-click"]
    with pytest.raises(ValueError, match="did you mean double-click"):
        parse_names("dubble-click")
