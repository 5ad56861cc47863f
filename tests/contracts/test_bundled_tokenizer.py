"""The cl100k_base file shipped with the package: loaded offline, and only if it is intact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.contracts.tokenizers import (
    _BUNDLED,
    TokenizerUnavailable,
    _cache,
    _offline_cl100k,
    load_tokenizer,
)


def test_cl100k_base_loads_from_the_bundled_file_without_any_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))  # nothing cached
    _cache.clear()
    tok = load_tokenizer("tiktoken:cl100k_base")
    assert tok.encoding.encode("hello world") == [15339, 1917]
    assert tok.encoding.name == "cl100k_base"
    assert not (tmp_path / "empty").exists()  # read in place: tiktoken's cache is not used
    _cache.clear()


def test_a_changed_bundled_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "cl100k_base.tiktoken"
    shutil.copy(_BUNDLED / "cl100k_base.tiktoken", copy)
    data = bytearray(copy.read_bytes())
    # Swap two ranks: a valid-looking file that would tokenize differently.
    lines = bytes(data).split(b"\n")
    first, second = lines[1000].split(), lines[1001].split()
    lines[1000], lines[1001] = first[0] + b" " + second[1], second[0] + b" " + first[1]
    copy.write_bytes(b"\n".join(lines))
    with pytest.raises(TokenizerUnavailable, match="corrupt") as info:
        _offline_cl100k(copy)
    assert "reinstall" in (info.value.fix or "")
