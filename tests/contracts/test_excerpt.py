"""An excerpt of evidence is redacted before it is cut, and a long text is not redacted whole to
show 160 characters of it: the excerpt of a prefix must be the excerpt of the whole text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.console import clean
from harness.contracts.records import EXCERPT_CHARS, Redactor
from harness.domain import redaction

SECRET = "Zq9-" + "k" * 96 + "-end"  # registered: an API key read from the environment
CONFIGURED = "cfg-" + "7" * 40  # the redactor's own (a provider's key from providers.yaml)


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    before = set(redaction._known)
    redaction.register_secret(SECRET)
    yield
    redaction._known.clear()
    redaction._known.update(before)


class Counting(Redactor):
    """A redactor that notes the length of each text it redacts."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__(secrets)
        self.lengths: list[int] = []

    def __call__(self, text: str) -> str:
        self.lengths.append(len(text))
        return super().__call__(text)


def whole(redactor: Redactor, text: str) -> str:
    """The excerpt as redacting the whole text and then cutting it gives it."""
    flat = clean(redactor(text)[: EXCERPT_CHARS * 4], one_line=True)
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"


PIECES = st.sampled_from([SECRET, CONFIGURED, "sk-" + "a" * 30, "Bearer abcdefghijkl",
                          'api_key: "abcdefghijkl"', "word", "naïve", "x" * 50, "sk-short",
                          SECRET[:40], "\u2028", "\x1b[31m"])


@settings(max_examples=60, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=40), st.integers(1, 400))
def test_the_excerpt_of_a_long_text_is_the_excerpt_of_the_whole(pieces: list[str],
                                                                 repeat: int) -> None:
    redactor = Redactor((CONFIGURED,))
    text = " ".join(pieces * repeat)
    assert redactor.excerpt(text) == whole(redactor, text)


def test_a_megabyte_is_not_redacted_whole_for_its_excerpt() -> None:
    redactor = Counting((CONFIGURED,))
    text = ("plain words " * 100_000)[:1_000_000]
    assert redactor.excerpt(text) == whole(Redactor((CONFIGURED,)), text)
    assert max(redactor.lengths) < 10_000


TOKEN = "eyJ" + "q" * 700  # registered too: a secret longer than any fixed margin (a JWT)


@pytest.mark.parametrize("filler", range(0, 1400, 50))
def test_a_secret_cut_at_the_prefix_never_shows(filler: int) -> None:
    # secrets redact to "[REDACTED]", so the window reaches far into the text: wherever the
    # prefix ends inside one, its unredacted part must not be shown
    redaction.register_secret(TOKEN)
    redactor = Redactor((CONFIGURED,))
    for secret in (SECRET, TOKEN):
        text = "w" * filler + " " + " ".join([secret] * 60)
        shown = redactor.excerpt(text)
        assert shown == whole(redactor, text)
        assert "kkkkk" not in shown and "qqqqq" not in shown


def test_secrets_shrinking_below_the_window_fall_back_to_the_whole_text() -> None:
    redactor = Counting((CONFIGURED,))
    text = "".join([SECRET + "."] * 2_000) + " after"  # 208 kB that redact to ~24 kB
    assert redactor.excerpt(text) == whole(Redactor((CONFIGURED,)), text)
    assert "kkkkk" not in redactor.excerpt(text)
    assert len(text) in redactor.lengths  # the prefix was not enough: the whole was redacted
