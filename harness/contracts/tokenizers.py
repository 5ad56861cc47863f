"""Offline tokenizers for the tokenization check: tiktoken encodings, HF tokenizer.json files.

``tiktoken:cl100k_base`` is shipped with the package (``tokenizer_data/``) and checked
against tiktoken's pinned sha256 on every load; other tiktoken encodings come from
``TIKTOKEN_CACHE_DIR``, checked the same way. We look for the file ourselves before tiktoken
is asked, so a missing encoding is an immediate error saying how to provide it, never a
network wait.
``hf:/path/tokenizer.json`` loads a Hugging Face ``tokenizers`` file from disk.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple, Protocol

import tiktoken

from harness.domain.errors import ConfigError
from harness.extras import require

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
# name -> (file tiktoken downloads, its sha256), as in tiktoken_ext/openai_public.py.
_TIKTOKEN_FILES: dict[str, tuple[str, str]] = {
    "r50k_base": (
        "r50k_base.tiktoken",
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    ),
    "p50k_base": (
        "p50k_base.tiktoken",
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
    "p50k_edit": (
        "p50k_base.tiktoken",
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
    "cl100k_base": (
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "o200k_harmony": (
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


class TokenizerUnavailable(ConfigError):
    """A provider's tokenizer cannot be loaded offline."""


class TokenReport(NamedTuple):
    """What one text looks like to a tokenizer (a tuple: built once per text, cheaply)."""

    tokens: int
    lossless: bool
    special: tuple[str, ...]  # special-token text found in it
    decoded: str = ""  # only when not lossless, to show the difference


class Tokenizer(Protocol):
    """An encoder the tokenization check can inspect texts with."""

    spec: str

    def inspect(self, text: str) -> TokenReport: ...

    def count(self, text: str) -> int: ...


class TiktokenTokenizer:
    """A tiktoken encoding.

    ``tiktoken.Encoding.encode`` refuses special-token text by default (it raises). We find
    the same text with the same kind of regex, report it, and encode it as ordinary text, so
    a hostile input is evidence rather than a crash.
    """

    def __init__(self, spec: str, encoding: tiktoken.Encoding) -> None:
        self.spec = spec
        self.encoding = encoding
        specials = sorted(encoding.special_tokens_set, key=len, reverse=True)
        self._special = re.compile("|".join(re.escape(s) for s in specials)) if specials \
            else None

    def inspect(self, text: str) -> TokenReport:
        enc = self.encoding
        special: tuple[str, ...] = ()
        if self._special is not None and self._special.search(text):
            special = tuple(sorted(set(self._special.findall(text))))
        ids = enc.encode_ordinary(text)
        if enc.decode_bytes(ids) == text.encode("utf-8", "surrogatepass"):
            return TokenReport(len(ids), True, special)
        return TokenReport(len(ids), False, special, enc.decode(ids))

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))


class HuggingFaceTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer from a tokenizer.json file."""

    def __init__(self, spec: str, path: Path) -> None:
        HFTokenizer = require("tokenizers").Tokenizer  # the `hf` extra

        self.spec = spec
        self.tokenizer = HFTokenizer.from_file(str(path))
        self._special = tuple(
            sorted(
                t.content
                for t in self.tokenizer.get_added_tokens_decoder().values()
                if t.special
            )
        )

    def inspect(self, text: str) -> TokenReport:
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        decoded = self.tokenizer.decode(ids, skip_special_tokens=False)
        lossless = decoded == text
        special = tuple(s for s in self._special if s and s in text)
        return TokenReport(len(ids), lossless, special, "" if lossless else decoded)

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


_cache: dict[tuple[str, str], Tokenizer] = {}
_lock = threading.Lock()


def load_tokenizer(spec: str, *, where: str = "tokenizer") -> Tokenizer:
    """The tokenizer named by ``spec`` (``tiktoken:NAME`` or ``hf:PATH``), loaded offline.

    ``where`` names the config field for error messages (``providers.x.tokenizer``).
    """
    cache_dir = _tiktoken_cache_dir()
    key = (spec, cache_dir)
    with _lock:
        if key not in _cache:
            _cache[key] = _load(spec, where, cache_dir)
        return _cache[key]


def _load(spec: str, where: str, cache_dir: str) -> Tokenizer:
    scheme, _, rest = spec.partition(":")
    if scheme == "tiktoken" and rest:
        return TiktokenTokenizer(spec, _tiktoken_encoding(rest, where, cache_dir))
    if scheme == "hf" and rest:
        path = Path(rest).expanduser()
        if not path.is_file():
            raise TokenizerUnavailable(
                f"tokenizer file {path} not found", field=where,
                fix="point hf: at a local tokenizer.json (e.g. the one shipped with the model "
                "weights); nothing is downloaded",
            )
        try:
            return HuggingFaceTokenizer(spec, path)
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise TokenizerUnavailable(
                f"{path} is not a valid tokenizer.json: {exc}", field=where,
                fix="use the tokenizer.json that belongs to the model",
            ) from None
    raise TokenizerUnavailable(
        f"unknown tokenizer {spec!r}", field=where,
        fix="use tiktoken:<encoding> (e.g. tiktoken:cl100k_base) or hf:/path/to/tokenizer.json",
    )


def _tiktoken_cache_dir() -> str:
    # The directory tiktoken's read_file_cached would use (tiktoken/load.py).
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _tiktoken_encoding(name: str, where: str, cache_dir: str) -> tiktoken.Encoding:
    if name == "cl100k_base":
        offline = _offline_cl100k()
        if offline is not None:
            return offline
    if name not in _TIKTOKEN_FILES:
        raise TokenizerUnavailable(
            f"unknown tiktoken encoding {name!r}", field=where,
            fix=f"use one of {', '.join(sorted(_TIKTOKEN_FILES))}",
        )
    filename, sha256 = _TIKTOKEN_FILES[name]
    url = _BLOB + filename
    cached = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    how = (
        f"download {url} on a machine with network access and save it as {cached} "
        f"(TIKTOKEN_CACHE_DIR={cache_dir}; the name is the SHA-1 of the URL)"
    )
    if cache_dir == "" or not cached.is_file():
        raise TokenizerUnavailable(
            f"tiktoken encoding {name!r} is not available offline "
            f"(looked for {cached or 'nothing: TIKTOKEN_CACHE_DIR is empty'})",
            field=where, fix=how,
        )
    if hashlib.sha256(cached.read_bytes()).hexdigest() != sha256:
        # tiktoken would delete the file and download it again: refuse instead.
        raise TokenizerUnavailable(
            f"the cached tiktoken file {cached} for {name!r} is corrupt (sha256 mismatch)",
            field=where, fix=how,
        )
    return tiktoken.get_encoding(name)


_BUNDLED = Path(__file__).parent / "tokenizer_data"
# cl100k_base as tiktoken_ext/openai_public.py builds it (the ranks file is the bundled one).
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
}


def _offline_cl100k(data: Path | None = None) -> tiktoken.Encoding | None:
    """cl100k_base from the bundled ranks file, refused unless its sha256 is tiktoken's."""
    data = data or _BUNDLED / "cl100k_base.tiktoken"
    if not data.is_file():
        return None
    contents = data.read_bytes()
    if hashlib.sha256(contents).hexdigest() != _TIKTOKEN_FILES["cl100k_base"][1]:
        raise TokenizerUnavailable(
            f"the bundled tiktoken file {data} is corrupt (sha256 mismatch)",
            fix="reinstall failover-harness (pip install --force-reinstall failover-harness)",
        )
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in contents.splitlines() if line)
    }
    return tiktoken.Encoding(name="cl100k_base", pat_str=_CL100K_PATTERN,
                             mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL)
