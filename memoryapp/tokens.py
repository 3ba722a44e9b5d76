"""The one token counter for budgets (DESIGN.md section 6 item 11).

Conservative on purpose: a budget computed here should never be exceeded by what a real
tokenizer counts. ASCII text is counted at one token per 4 characters (rounded up per
word-ish run), every non-ASCII code point as one token (CJK, Arabic, emoji and combining
marks are each at least one token in every tokenizer we know of).
"""

from __future__ import annotations

import math


def count_tokens(text: str) -> int:
    """Return an upper-leaning estimate of the tokens in ``text`` (an int >= 0)."""
    if not text:
        return 0
    ascii_chars = 0
    non_ascii = 0
    for ch in text:
        if ord(ch) < 128:
            ascii_chars += 1
        else:
            non_ascii += 1
    words = len(text.split())
    return max(math.ceil(ascii_chars / 4), words) + non_ascii
