"""The YAML loader refuses control bytes, excessive depth and alias bombs in milliseconds,
as bad input (exit 2) naming the file and line, with a fix; non-UTF-8 files the same."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.domain.errors import ConfigError
from harness.yamlsrc import MAX_ALIASES, MAX_DEPTH, load_yaml

ROOT = Path(__file__).resolve().parents[2]


def _bomb(levels: int = 9, width: int = 10) -> str:
    text = "a0: &a0 [" + ", ".join(["lol"] * width) + "]\n"
    for n in range(1, levels):
        text += f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]\n"
    return text


CASES = {
    "nul": ("version: 1\nname: a\x00b\n", 2, "U+0000"),
    "esc": ('version: 1\nname: "a\x1b[31mb"\n', 2, "U+001B"),
    "del": ("version: 1\n\n\nname: a\x7f\n", 4, "U+007F"),
    # a noncharacter YAML refuses (PyYAML's reader, when its loader is made): it escaped as a
    # raw yaml.reader.ReaderError before the loader was made inside compose_checked's try
    "noncharacter": ("version: 1\nname: a\uffffb\n", 2, "special characters are not allowed"),
    "deep-flow": ("a: " + "[" * 20_000 + "]" * 20_000 + "\n", 1, "nested deeper"),
    "deep-block": "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "x: 1\n",
    "alias-bomb": (_bomb(), 6, "expand it to more than"),  # a5: 10^6 values
    "alias-count": ("a: &a x\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n", 2,
                    "aliases"),
}
CASES["deep-block"] = (CASES["deep-block"], None, "nested deeper")  # type: ignore[assignment]


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_yaml_file_is_refused_quickly_naming_file_and_line(
    name: str, tmp_path: Path
) -> None:
    text, line, said = CASES[name]
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    # CPU time of this thread, not wall time: the work the loader does before it refuses (a
    # blow-up is seconds of CPU), which neither a loaded machine's waiting for a core nor the
    # worker's other threads inflate
    started = time.thread_time()
    with pytest.raises(ConfigError) as caught:
        load_yaml(path)
    elapsed = time.thread_time() - started
    assert elapsed < 1.0, f"{name}: {elapsed:.2f} s of CPU"
    error = caught.value
    assert said in error.message and error.file == str(path) and error.fix
    if line is not None:
        assert error.line == line


@pytest.mark.parametrize("name", ["nul", "esc", "deep-flow", "alias-bomb", "noncharacter"])
def test_the_cli_exits_2_for_a_hostile_providers_file(name: str, tmp_path: Path, capsys,
                                                      monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "providers.yaml").write_text(CASES[name][0], encoding="utf-8")
    assert main(["gate", "--providers", "providers.yaml"]) == 2
    err = capsys.readouterr().err
    assert "providers.yaml:" in err and "\n  fix: " in err and "internal error" not in err
    assert not (tmp_path / "reports").exists()


def test_a_non_utf8_providers_file_is_exit_2_with_the_line_and_a_fix(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "providers.yaml").write_bytes(b"version: 1\nproviders:\n  caf\xe9: {}\n")
    assert main(["gate", "--providers", "providers.yaml"]) == 2
    err = capsys.readouterr().err
    assert "providers.yaml:3: not UTF-8" in err and "\n  fix: " in err


@pytest.mark.parametrize(("outer", "above"), [("", 0), ("a: ", 1), ("a:\n  b: ", 2)])
@pytest.mark.parametrize(("opening", "closing", "inner"), [
    ("[", "]", 0),  # the innermost [] holds nothing
    ("{a: ", "}", 1),  # the innermost {a: } holds a null: one level more
])
def test_the_depth_limit_counts_every_level_once(outer: str, above: int, opening: str,
                                                 closing: str, inner: int,
                                                 tmp_path: Path) -> None:
    """The scanner refuses a flow collection opened beyond the limit before the composer sees
    it, and refuses nothing the composer would take: ``MAX_DEPTH`` levels in all load (the
    block levels above, the flow collections, the innermost value), one more is refused."""
    path = tmp_path / "nested.yaml"
    for total, refused in ((MAX_DEPTH, False), (MAX_DEPTH + 1, True)):
        flows = total - above - inner
        path.write_text(outer + opening * flows + closing * flows + "\n", encoding="utf-8")
        if refused:
            with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH} levels"):
                load_yaml(path)
        else:
            assert load_yaml(path) is not None


def test_anchors_and_merge_keys_in_moderation_still_load(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &base {kind: openai-chat, temperature: 0}\n"
                    "a: {<<: *base, model: m1}\nb: {<<: *base, model: m2}\n", encoding="utf-8")
    assert load_yaml(path).data["b"] == {"kind": "openai-chat", "temperature": 0, "model": "m2"}
