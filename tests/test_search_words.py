"""How full-text search reads apostrophes (memoryapp/search_words.py)."""

from __future__ import annotations

import pytest

from memoryapp.search_words import search_text, sqlite_search_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The user's sister", "The user sister"),
        ("it's late", "it late"),
        ("IT'S LATE", "IT LATE"),
        ("don't", "do not"),
        ("Doesn't", "Does not"),
        ("I can't, she won't, we shan't, it ain't", "I can not, she will not, we shall not, it is not"),
        ("we're, you've, she'll, I'd, I'm", "we, you, she, I, I"),
        ("Mara\u2019s dog doesn\u2019t bark", "Mara dog does not bark"),
        ("Mara\u02bcs", "Mara"),
        ("the 90's", "the 90"),
        # No clitic: left to the engine's own split.
        ("O'Brien met D'Arcy", "O'Brien met D'Arcy"),
        ("rock'n'roll", "rock'n'roll"),
        ("the students' rooms", "the students' rooms"),
        ("'so' he said", "'so' he said"),
        ("no apostrophe here", "no apostrophe here"),
    ],
)
def test_it_reads_clitics_after_an_apostrophe_as_no_word_of_their_own(
    text: str, expected: str
) -> None:
    assert search_text(text) == expected


def test_the_sqlite_function_passes_null_and_other_values_through() -> None:
    assert (sqlite_search_text(None), sqlite_search_text(3), sqlite_search_text("it's")) == (
        None,
        3,
        "it",
    )
