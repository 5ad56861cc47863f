"""harness/yamlsrc.py reads a file with libyaml's parser (C) under its own Python composer and
limits, and with PyYAML's pure-Python loader where libyaml would accept what PyYAML refuses, or
where libyaml failed: the same data, every node at the same line and column, and every error
PyYAML's own (its message and line)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import yamlsrc
from harness.domain.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*ROOT.glob("scenarios/**/*.yaml"), *ROOT.glob("contracts/**/*.yaml"),
                  *ROOT.glob("examples/**/*.yaml"), ROOT / "providers.yaml"])
#: what the mutations insert: YAML's indicators, whitespace and line breaks
CHARACTERS = list(" \n:-#'\"[]{},&*!|>%@`?abc1.\\\u00a0\u2028\x85\ufeff")


def nodes(node: yaml.Node | None) -> list[tuple[Any, ...]]:
    """Every node, depth first: its kind, tag, value and style, where it starts, and where a
    scalar ends (line and column). Not what nothing reads, where libyaml differs: the end of a
    block collection (libyaml's is where the next token starts, PyYAML's where its last
    ended), a collection's ``flow_style`` (False or None for a block sequence not indented
    under its key), the column of an empty value (``key:`` alone: one further)."""
    if node is None:
        return []
    start = (node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.ScalarNode):
        ends = (node.end_mark.line, node.end_mark.column)
        if node.value == "":
            start, ends = (start[0], None), (ends[0], None)
        found: list[tuple[Any, ...]] = [("scalar", node.tag, node.value, node.style, start, ends)]
        return found
    found = [(type(node).__name__, node.tag, start)]
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            found += nodes(key) + nodes(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found += nodes(item)
    return found


def read(text: str) -> tuple[str, Any]:
    """``("read", (nodes, data))`` or ``("refused", (message, line))``."""
    try:
        root, data = yamlsrc.compose_checked(text, "f.yaml")
    except ConfigError as exc:
        return "refused", (exc.message, exc.line)
    return "read", (nodes(root), data)


@pytest.fixture
def python_only(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``read`` with PyYAML's pure-Python loader alone (as before libyaml was used)."""
    def only(text: str) -> tuple[str, Any]:
        with monkeypatch.context() as patch:
            patch.setattr(yamlsrc, "_fast", lambda text: False)
            return read(text)
    return only


@pytest.fixture
def fast_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources the fast loader read whole (its document built): a failure of it, which
    PyYAML's loader then hides, is not counted."""
    done: list[str] = []

    class Counted(yamlsrc._FastLoader):  # type: ignore[misc,name-defined]
        def construct_document(self, node: yaml.Node) -> Any:
            data = super().construct_document(node)
            done.append(self.source)
            return data

    monkeypatch.setattr(yamlsrc, "_FastLoader", Counted)
    return done


def test_libyaml_is_there_and_reads_every_shipped_file_as_pyyaml_does(
        python_only: Any, fast_reads: list[str]) -> None:
    assert yamlsrc._CParser is not None, "PyYAML without libyaml: its wheels carry it"
    for path in SHIPPED:
        text = path.read_text("utf-8")
        assert read(text) == python_only(text), path
    assert len(fast_reads) == len(SHIPPED) > 40  # every one read by libyaml, none fell back


def test_mutated_files_read_alike_or_are_refused_alike(python_only: Any,
                                                        fast_reads: list[str]) -> None:
    """Shipped files with a few characters inserted, deleted or replaced (a fixed seed): what
    PyYAML alone reads is read alike, and what it refuses is refused with its own error."""
    rng = random.Random(2026)
    seen = {"read": 0, "refused": 0}
    for _ in range(400):
        text = rng.choice(SHIPPED).read_text("utf-8")
        for _ in range(rng.randint(1, 4)):
            at, what = rng.randrange(len(text) + 1), rng.random()
            new = rng.choice(CHARACTERS)
            text = (text[:at] + new + text[at:] if what < 0.4 else text[:at] + text[at + 1:]
                    if what < 0.7 else text[:at] + new + text[at + 1:])
        now = read(text)
        assert now == python_only(text), text
        seen[now[0]] += 1
    assert seen["read"] > 100 and seen["refused"] > 100, seen  # both sides were exercised
    assert len(fast_reads) > 100  # most of what was read, libyaml read


@pytest.mark.parametrize(("text", "said"), [
    ("b: \t1\n", "found character '\\t' that cannot start any token"),
    ("a: {b: c?d}\n", "expected ',' or '}', but got '?'"),
    ("a: [b, c?d]\n", "expected ',' or ']', but got '?'"),
    ("a: >#\n  x\n", "expected chomping or indentation indicators, but found '#'"),
    ("a: [!!str, x]\n", "could not determine a constructor for the tag"),
    ("{a: !!str, b: 1}\n", "expected ',' or '}', but got ':'"),
])
def test_what_libyaml_accepts_and_pyyaml_refuses_is_refused_as_before(text: str,
                                                                        said: str) -> None:
    """libyaml reads these (a tag ends at a comma for it); PyYAML refuses them, and so does
    the loader."""
    assert yaml.load(text, Loader=yaml.CSafeLoader) is not None  # libyaml would take it
    with pytest.raises(ConfigError) as caught:
        yamlsrc.compose_checked(text, "f.yaml")
    assert said in caught.value.message


def test_a_byte_order_mark_inside_the_text_is_read_as_pyyaml_reads_it(python_only: Any) -> None:
    """libyaml skips U+FEFF at the start of any line (the key below would nest); PyYAML only at
    the very start, so the loader reads as PyYAML: a key that begins with it."""
    text = "a:\n\ufeff  b: 1\n"
    assert yaml.load(text, Loader=yaml.CSafeLoader) == {"a": {"b": 1}}
    assert read(text) == python_only(text)
    assert read(text)[1][1] == {"a": None, "\ufeff  b": 1}
