"""The one token counter (memoryapp/tokens.py; DESIGN.md section 6 item 11)."""

from __future__ import annotations

import pytest

from memoryapp.tokens import count_tokens

SAMPLES = [
    "",
    "hello",
    "I drive a Honda Civic.",
    "a b c d e",
    "東京で会議",
    "🚗🚗 road trip 👍🏽",
    "café au lait",
    "x" * 1000,
    "   \n\t ",
    "Supercalifragilisticexpialidocious",
]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello", 2),  # 5 ASCII characters: ceil(5 / 4)
        ("Hello, world!", 4),  # 13 characters outweigh 2 words
        ("a b c d e", 5),  # 5 words outweigh ceil(9 / 4) = 3
        ("x" * 1000, 250),
        ("café", 2),  # ceil(3 / 4) for the ASCII, plus one for "é"
        ("日本語", 4),  # one word, plus one per code point
        ("🚗", 2),
        ("👍🏽", 3),  # an emoji with a skin-tone modifier is two code points
        ("   \n\t ", 2),  # whitespace is text too: ceil(6 / 4)
    ],
)
def test_it_counts_tokens_conservatively(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


@pytest.mark.parametrize("text", SAMPLES)
def test_it_counts_at_least_one_per_word_and_per_non_ascii_code_point(text: str) -> None:
    non_ascii = sum(1 for ch in text if ord(ch) >= 128)
    assert count_tokens(text) >= len(text.split())
    assert count_tokens(text) >= non_ascii
    assert count_tokens(text) >= -(-sum(1 for ch in text if ord(ch) < 128) // 4)


def test_it_never_counts_joined_lines_above_their_parts_plus_one_each() -> None:
    # Budgets (summaries, memory notes) add up lines this way; the joined text must fit.
    for i in range(len(SAMPLES)):
        parts = SAMPLES[i:] + SAMPLES[:i]
        assert count_tokens("\n".join(parts)) <= sum(count_tokens(p) + 1 for p in parts)
