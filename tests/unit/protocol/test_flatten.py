"""Flattening and bounding of text put into error messages (docs/errors.md, "Flattening and bounding").

C0 and C1 control characters, DEL, U+2028 and U+2029 become a space, invalid UTF-8
becomes U+FFFD, and the result is at most ``limit`` bytes of UTF-8, cut on a character
boundary with "…" appended when cut.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings, strategies as st

from mcpkit import flatten_text

ELLIPSIS = "…"
FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
SURROGATE = re.compile("[\ud800-\udfff]")

# Characters worth over-sampling: every forbidden kind, multi-byte characters of each
# UTF-8 length, lone surrogates, the ellipsis itself, and the replacement character.
_SPECIAL = [
    "\x00", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f",
    "\u2028", "\u2029", "\u200b", "\ufeff", "é", "€", "…", "\ufffd", "😀", "\U0010ffff",
    "\ud800", "\udbff", "\udc00", "\udfff",
]  # fmt: skip

any_char = st.one_of(st.characters(exclude_categories=()), st.sampled_from(_SPECIAL))
any_text = st.text(any_char, max_size=300)
limits = st.integers(min_value=16, max_value=400)

# Bytes: arbitrary, and valid UTF-8 with invalid sequences spliced in.
_BAD_UTF8 = [b"\xff", b"\xfe", b"\xc0\xaf", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]
any_bytes = st.one_of(
    st.binary(max_size=300),
    st.lists(
        st.one_of(
            st.text(st.characters(codec="utf-8"), max_size=20).map(lambda s: s.encode("utf-8")), st.sampled_from(_BAD_UTF8)
        ),
        max_size=30,
    ).map(b"".join),
)


def reference(text: str | bytes) -> str:
    """The flattened, unbounded text the contract describes."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = FORBIDDEN.sub(" ", text)
    return SURROGATE.sub("\ufffd", text)


def check(text: str | bytes, limit: int) -> str:
    out = flatten_text(text, limit)
    assert isinstance(out, str)
    encoded = out.encode("utf-8")  # valid UTF-8: no lone surrogates
    assert not SURROGATE.search(out)
    assert not FORBIDDEN.search(out), f"control or line separator left in {out!r}"
    assert len(encoded) <= limit
    full = reference(text)
    if len(full.encode("utf-8")) <= limit:
        assert out == full  # nothing cut: nothing but the substitutions
    else:
        # cut: a prefix on a character boundary, the longest that fits, plus "…"
        assert out.endswith(ELLIPSIS)
        kept = out[: -len(ELLIPSIS)]
        assert full.startswith(kept)
        budget = limit - len(ELLIPSIS.encode("utf-8"))
        assert len(kept.encode("utf-8")) <= budget
        assert len((kept + full[len(kept)]).encode("utf-8")) > budget
    return out


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=600, deadline=None)
@given(any_text, limits)
@example("a" * 17, 16)
@example("é" * 9, 16)
@example("😀" * 5, 16)
@example("\ud800" * 10, 16)
@example("…" * 6, 16)
def test_any_string_is_flat_valid_and_bounded(text: str, limit: int) -> None:
    check(text, limit)


@settings(max_examples=600, deadline=None)
@given(any_bytes, limits)
@example(b"\xff" * 20, 16)
@example(b"\xed\xa0\x80", 16)
def test_any_bytes_are_flat_valid_and_bounded(data: bytes, limit: int) -> None:
    check(data, limit)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_default_limit_is_1024_bytes(text: str) -> None:
    out = flatten_text(text * 5)
    assert len(out.encode("utf-8")) <= 1024
    assert out == flatten_text(text * 5, 1024)


@settings(max_examples=400, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=200), limits)
def test_clean_short_text_is_returned_unchanged(text: str, limit: int) -> None:
    if len(text.encode("utf-8")) <= limit:
        assert flatten_text(text, limit) == text
        assert flatten_text(text.encode("utf-8"), limit) == text
        assert not flatten_text(text, limit).endswith(ELLIPSIS) or text.endswith(ELLIPSIS)
    else:
        out = flatten_text(text, limit)
        assert out.endswith(ELLIPSIS)
        assert text.startswith(out[: -len(ELLIPSIS)])


@settings(max_examples=300, deadline=None)
@given(any_text, limits)
def test_flattening_is_idempotent(text: str, limit: int) -> None:
    once = flatten_text(text, limit)
    assert flatten_text(once, limit) == once


# --- examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("line one\nline two", "line one line two"),
        ("a\r\nb\tc", "a  b c"),
        ("\x00\x01\x1b[31mred\x1b[0m", "   [31mred [0m"),
        ("del\x7fc1\x80\x85\x9fend", "del c1   end"),
        ("para\u2028graph\u2029end", "para graph end"),
        ("no change: é € 😀 … \u200b", "no change: é € 😀 … \u200b"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        (b"bytes \xff\xfe ok", "bytes \ufffd\ufffd ok"),
        (b"caf\xc3\xa9\n", "café "),
        ("", ""),
    ],
)
def test_examples(text: str | bytes, expected: str) -> None:
    assert flatten_text(text) == expected


def test_cut_on_the_exact_byte_budget() -> None:
    assert flatten_text("x" * 1024) == "x" * 1024
    out = flatten_text("x" * 1025)
    assert out == "x" * 1021 + ELLIPSIS
    assert len(out.encode("utf-8")) == 1024


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("é" * 20, 16, "é" * 6 + ELLIPSIS),  # 2-byte chars: 13 bytes of budget -> 6 chars
        ("€" * 20, 16, "€" * 4 + ELLIPSIS),  # 3-byte chars: 12 bytes
        ("😀" * 20, 16, "😀" * 3 + ELLIPSIS),  # 4-byte chars: 12 bytes
        ("ab" + "😀" * 20, 16, "ab" + "😀" * 2 + ELLIPSIS),  # 2 + 8 = 10 bytes, the next emoji does not fit
        ("a\nb" * 20, 16, "a ba ba ba ba" + ELLIPSIS),  # flattened first, then cut
    ],
)
def test_cut_never_splits_a_character(text: str, limit: int, expected: str) -> None:
    out = flatten_text(text, limit)
    assert out == expected
    assert len(out.encode("utf-8")) <= limit


def test_text_of_exactly_the_limit_with_multibyte_characters_is_not_cut() -> None:
    text = "é" * 8  # 16 bytes
    assert flatten_text(text, 16) == text
    assert flatten_text(text + "x", 16) == "é" * 6 + ELLIPSIS


def test_the_smallest_limit_is_four_bytes() -> None:
    # Room for the ellipsis (3 bytes) and one byte of text, no less.
    assert flatten_text("abcdef", 4) == "a" + ELLIPSIS
    assert flatten_text("abcd", 4) == "abcd"
    assert flatten_text("é" * 3, 4) == ELLIPSIS  # no whole character fits beside the ellipsis
    assert flatten_text("", 4) == ""
    for limit in (3, 0, -1):
        with pytest.raises(ValueError, match=r"^limit must be at least 4 bytes$"):
            flatten_text("", limit)


@pytest.mark.parametrize("limit", [4, 5, 8, 16])
def test_short_text_near_a_small_limit(limit: int) -> None:
    # The longest text that fits is kept whole; one more character is cut to fit.
    fits = "😀" * (limit // 4) + "a" * (limit % 4)
    assert flatten_text(fits, limit) == fits
    assert len(flatten_text(fits + "b", limit).encode("utf-8")) <= limit
    assert flatten_text(fits + "b", limit).endswith(ELLIPSIS)
