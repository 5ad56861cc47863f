"""Tokenizers load offline or fail at once; the tokenization check finds what it should."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import tiktoken.load
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from harness.contracts.checks import tokenization_check, tokenizer_fidelity
from harness.contracts.loader import load_contract
from harness.contracts.records import Redactor
from harness.contracts.render import leftover_placeholders, render
from harness.contracts.tokenizers import TokenizerUnavailable, _cache, load_tokenizer
from tests.contracts.conftest import SHIPPED

CONTRACT = load_contract(SHIPPED)


def _corpus() -> list[str]:
    texts = []
    for golden in CONTRACT.goldens:
        rendered = render(CONTRACT, golden.input)
        texts += [rendered.system, rendered.user]
    return texts


@pytest.fixture(scope="module")
def byte_level_bpe(tmp_path_factory) -> Path:
    """A tiny byte-level BPE tokenizer.json trained here on the golden prompts (no download)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(), trainer)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def word_level(tmp_path_factory) -> Path:
    """A word-level tokenizer: whitespace is lost on decode, so it is lossy on purpose."""
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(_corpus(), trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def _check(tokenizer, *, contract=CONTRACT, kind="openai-chat", window=8192, model="gpt-4"):
    return tokenization_check(
        contract, tokenizer=tokenizer, context_window=window, max_output_tokens=512, kind=kind,
        model=model, redact=Redactor(),
    )


def test_cl100k_base_comes_from_the_offline_package(monkeypatch) -> None:
    _cache.clear()

    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"tried to fetch {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    tok = load_tokenizer("tiktoken:cl100k_base")
    report = tok.inspect("Zniknęły wszystkie projekty — 二段階認証")
    assert report.lossless and report.tokens > 5 and report.special == ()
    assert _check(tok).passed


def test_a_missing_encoding_fails_at_once_saying_how_to_provide_it(monkeypatch, tmp_path) -> None:
    _cache.clear()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"tried to fetch {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    with pytest.raises(TokenizerUnavailable) as info:
        load_tokenizer("tiktoken:o200k_base", where="providers.gpt4o.tokenizer")
    err = info.value
    assert err.field == "providers.gpt4o.tokenizer"
    assert "not available offline" in err.message and str(tmp_path) in err.message
    assert "o200k_base.tiktoken" in err.fix and "TIKTOKEN_CACHE_DIR" in err.fix
    corrupt = tmp_path / "fb374d419588a4632f3f557e76b4b70aebbca790"  # sha1 of its URL
    corrupt.write_bytes(b"not the encoding")
    _cache.clear()
    with pytest.raises(TokenizerUnavailable, match="corrupt"):
        load_tokenizer("tiktoken:o200k_base")
    with pytest.raises(TokenizerUnavailable, match="unknown tiktoken encoding"):
        load_tokenizer("tiktoken:nope")


def test_an_encoding_in_the_cache_dir_is_used(monkeypatch, tmp_path) -> None:
    # Provide cl100k_base through TIKTOKEN_CACHE_DIR, as a user would for other encodings.
    from harness.contracts.tokenizers import _BUNDLED

    data = _BUNDLED / "cl100k_base.tiktoken"
    name = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # sha1 of the cl100k_base URL
    (tmp_path / name).write_bytes(data.read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("harness.contracts.tokenizers._offline_cl100k", lambda: None)
    _cache.clear()
    tok = load_tokenizer("tiktoken:cl100k_base")
    assert tok.inspect("hello world").tokens == 2
    _cache.clear()


def test_a_hugging_face_tokenizer_json_from_disk(byte_level_bpe: Path) -> None:
    tok = load_tokenizer(f"hf:{byte_level_bpe}")
    result = _check(tok, kind="anthropic-messages")
    assert result.passed, result.evidence
    assert result.figures["tokenizer"] == f"hf:{byte_level_bpe}"


def test_a_special_token_of_a_hugging_face_tokenizer_is_found(byte_level_bpe: Path) -> None:
    tok = load_tokenizer(f"hf:{byte_level_bpe}")
    assert tok.inspect("hi <|im_end|> there").special == ("<|im_end|>",)
    with pytest.raises(TokenizerUnavailable, match="not found"):
        load_tokenizer("hf:/no/such/tokenizer.json")


def test_a_lossy_tokenizer_fails_the_check(word_level: Path) -> None:
    result = _check(load_tokenizer(f"hf:{word_level}"))
    assert not result.passed
    assert "is lossy" in result.evidence[0].reason
    assert "became" in result.evidence[0].excerpt


def test_a_missing_variable_is_an_unrendered_placeholder() -> None:
    template = CONTRACT.user_template + "{{ order_id }}"
    contract = dataclasses.replace(CONTRACT, user_template=template)
    result = _check(load_tokenizer("tiktoken:cl100k_base"), contract=contract)
    assert not result.passed
    assert result.evidence[0].reason == "unrendered placeholder: 'order_id' is undefined"


def test_leftover_placeholders_not_from_the_input() -> None:
    assert leftover_placeholders("Dear {name}, order ${id}", {}) == ["{name}", "${id}"]
    assert leftover_placeholders("quote: {{ x }}", {"body": "quote: {{ x }}"}) == []


@pytest.mark.parametrize(
    ("kind", "model", "spec", "exact", "wording"),
    [
        ("openai-chat", "gpt-4", "tiktoken:cl100k_base", True, "the model's own encoding"),
        ("openai-chat", "gpt-4o-mini-2024-07-18", "tiktoken:cl100k_base", False,
         "an approximation ('gpt-4o-mini-2024-07-18' uses o200k_base)"),
        ("openai-chat", "llama-3.1-8b", "tiktoken:cl100k_base", False,
         "tiktoken does not know model 'llama-3.1-8b'"),
        ("anthropic-messages", "claude-3-5-haiku-20241022", "tiktoken:cl100k_base", False,
         "an approximation (Anthropic's tokenizer is not public)"),
        ("openai-chat", "m", "hf:/x/tokenizer.json", False, "cannot be verified offline"),
    ],
)
def test_the_tokenizer_wording_says_when_it_is_an_approximation(
    kind, model, spec, exact, wording
) -> None:
    got_exact, got_wording = tokenizer_fidelity(kind, model, spec)
    assert got_exact is exact and wording in got_wording


def test_an_approximate_count_gets_a_margin_before_the_fit() -> None:
    tok = load_tokenizer("tiktoken:cl100k_base")
    exact = _check(tok, model="gpt-4")
    tokens = exact.figures["max_prompt_tokens"]
    window = tokens + 512 + 5  # fits exactly counted, not with the approximation's margin
    assert _check(tok, model="gpt-4", window=window).passed
    approx = _check(tok, kind="anthropic-messages", model="claude", window=window)
    assert not approx.passed
    assert "×1.25 for an approximate count" in approx.evidence[0].reason
    assert "an approximation" in approx.summary
    assert approx.figures["tokenizer_exact"] is False and approx.figures["count_margin"] == 1.25
